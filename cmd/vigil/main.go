// Command vigil is Vigil's one binary: its subcommands run the roles (control, checker,
// location), the embedded development network, and the operator's tools.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// command is one command or subcommand of vigil, with its help. The top-level commands are
// dispatched from this table; a command with subcommands dispatches them itself and lists
// them in subs, which its help and TestHelp walk.
type command struct {
	name    string
	summary string // one line: what the command is for
	usage   string // usage lines, without the word "usage"
	detail  string // optional: more about arguments and behaviour
	example string // one or a few command lines
	groups  flagGroups
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
	subs    []command
}

// commands lists the commands, in the order help and docs/cli.md list them. Each lives in a
// file of its own name; the entry of one with subcommands or a long description is built by
// a function of its own below.
func commands() []command {
	return []command{
		{name: "agent", summary: "run a node's roles: control (raft voter and API), checker, location (DNS)", run: runAgent,
			usage:   "vigil agent [flags]",
			detail:  "Roles combine: -roles control,checker,location runs all three in one process. Flags that\nstart \"control:\", \"checker:\" or \"location:\" apply to that role only.",
			example: "vigil agent -roles control -id c1 -bootstrap -token-file tokens.txt -insecure-raft-plaintext -insecure-gossip\nvigil agent -roles checker,location -id n1 -region us-east -join 127.0.0.1:7946 -control http://127.0.0.1:7100 -token-file tokens.txt -insecure-gossip -http 127.0.0.1:7701\nvigil agent -config /etc/vigil/agent.yaml -log-level debug",
			groups:  agentFlagGroups()},
		{name: "apply", summary: "apply a whole configuration file through the control plane", run: runApply,
			usage:   "vigil apply -f FILE [flags]",
			detail:  "The control plane applies the document atomically or rejects it with every problem listed.",
			example: "vigil apply -f examples/demo.yaml -server http://127.0.0.1:7700 -token-file token.txt"},
		{name: "audit", summary: "print the control plane's audit log: who wrote what, when", run: runAudit,
			usage:   "vigil audit [flags]",
			example: "vigil audit -n 20\nvigil audit -verify"},
		devCommand(),
		importCommand(),
		keyringCommand(),
		overrideCommand(),
		dnssecCommand(),
		tsigCommand(),
		{name: "externaldns", summary: "serve the ExternalDNS webhook provider: ExternalDNS's records become Vigil record sets", run: runExternalDNS,
			usage:   "vigil externaldns -zone ZONE[,ZONE...] [flags]",
			example: "vigil externaldns -zone example.com. -listen 127.0.0.1:8888 -server https://c1:7100 -token-file token.txt -tls-ca ca.pem"},
		loadCommand(),
		simCommand(),
		recoverCommand(),
		routerCommand(),
		shardCommand(),
		{name: "status", summary: "print a node's status: verdicts, evidence, checkers, answers, probes, members", run: runStatus,
			usage:   "vigil status [flags] VIEW [ARGS]",
			example: "vigil status -addr 127.0.0.1:7701 verdicts",
			subs:    statusViews()},
		tlsCommand(),
		tokenCommand(),
		{name: "target", summary: "serve a demo target whose health endpoint can be switched down and up", run: runTarget,
			usage:   "vigil target [flags]",
			detail:  "GET /healthz answers 200 while up and 503 while down; POST /down and POST /up flip it.",
			example: "vigil target -listen 127.0.0.1:7811 -name us-east"},
		votersCommand(),
		{name: "validate", summary: "check a configuration file and list every problem", run: runValidate,
			usage:   "vigil validate [-f FILE]",
			detail:  "Without -f it checks the demo built into vigil. Exit status 1 when the file has problems.",
			example: "vigil validate -f examples/demo.yaml"},
		{name: "version", summary: "print the build version, commit and Go version (also vigil --version)", run: runVersion,
			usage:   "vigil version",
			example: "vigil version"},
	}
}

// devCommand is the entry of vigil dev, with its subcommands.
func devCommand() command {
	return command{name: "dev", summary: "run a whole multi-region network in this process, on loopback; drive its faults", run: runDev,
		usage:   "vigil dev [flags]\nvigil dev SUBCOMMAND [flags] [ARGS]",
		example: "vigil dev\nvigil dev target us-east down",
		subs: []command{
			{name: "target", summary: "fail or recover a demo target's health check", usage: "vigil dev target [flags] REGION down|up", example: "vigil dev target us-east down"},
			{name: "cut", summary: "cut two regions apart, or one from all others", usage: "vigil dev cut [flags] REGION [REGION]", example: "vigil dev cut us-east eu-west"},
			{name: "heal", summary: "restore every link", usage: "vigil dev heal [flags]", example: "vigil dev heal"},
			{name: "faults", summary: "list the faults in force", usage: "vigil dev faults [flags]", example: "vigil dev faults"},
			{name: "notifications", summary: "show what the dev webhook and Alertmanager receivers got", usage: "vigil dev notifications [flags]", example: "vigil dev notifications"},
		}}
}

// importCommand is the entry of vigil import, with its subcommands.
func importCommand() command {
	return command{name: "import", summary: "read a zone file (BIND, NSD, Knot, a provider's export) into a configuration document", run: runImport,
		usage:   "vigil import zonefile -zone ZONE [-o FILE] FILE",
		example: "vigil import zonefile -zone example.com -o example.com.yaml example.com.zone",
		subs: []command{
			{name: "zonefile", summary: "print the configuration document of an RFC 1035 zone file, listing what it leaves out",
				usage: "vigil import zonefile -zone ZONE [-o FILE] [-regions LIST] FILE",
				detail: "Follows $ORIGIN, $TTL and $INCLUDE (relative to the file that names it); refuses $GENERATE.\n" +
					"Every malformed entry is listed with its line, and nothing is written. Each record the\n" +
					"document leaves out or changes (a type Vigil does not serve, DNSSEC records, data below\n" +
					"a delegation that is not glue, differing TTLs in one set) is listed with its line.\n" +
					"Exit status 0: the document holds the whole zone; 1: errors (nothing written), or\n" +
					"something left out or changed (the document written); 2: usage. FILE - reads stdin.",
				example: "vigil import zonefile -zone example.com -o example.com.yaml example.com.zone\nnsd-checkzone -p example.com example.com.zone | vigil import zonefile -zone example.com -"},
		}}
}

// keyringCommand is the entry of vigil keyring, with its details.
func keyringCommand() command {
	return command{name: "keyring", summary: "rotate the gossip key on every node of a running pool: list, install, use, remove", run: runKeyring,
		usage: "vigil keyring [flags] list | install KEY | use KEY | remove KEY | generate",
		detail: "Applies one step of a gossip key rotation on every live node of the pool and prints each\n" +
			"node's keys (as fingerprints): install (every node accepts KEY), use (every node encrypts\n" +
			"with it), remove (every node refuses it from now on). KEY is base64, or @FILE for the first\n" +
			"key of a file. The command joins the pool for the time of the step, as a member with the\n" +
			"keys of -gossip-key-file, and leaves. generate prints a new random key. Each node also\n" +
			"saves its keyring in its data directory (gossip.keyring), which it starts with from then on.",
		example: "vigil keyring generate > new.key\n" +
			"vigil keyring -gossip-key-file old.key install @new.key\n" +
			"vigil keyring -gossip-key-file old.key use @new.key\n" +
			"vigil keyring -gossip-key-file new.key remove @old.key"}
}

// overrideCommand is the entry of vigil override, with its subcommands.
func overrideCommand() command {
	return command{name: "override", summary: "force a check healthy or unhealthy, or drain a record, for a while (set, list, clear)", run: runOverride,
		usage:   "vigil override set|list|clear [flags] [ID]",
		example: "vigil override set -check web-us -state unhealthy -reason \"maintenance\" -for 30m",
		subs: []command{
			{name: "set", summary: "force a check's verdict or drain a record, for a while",
				usage:   "vigil override set -check ID -state healthy|unhealthy -reason TEXT [-for DURATION] [flags]\nvigil override set -drain ZONE/NAME/TYPE/VALUE -reason TEXT [-for DURATION] [flags]",
				example: "vigil override set -drain example.com/www/A/192.0.2.1 -reason \"replace disk\" -for 2h"},
			{name: "list", summary: "list the overrides in force", usage: "vigil override list [flags]", example: "vigil override list"},
			{name: "clear", summary: "end an override before its time", usage: "vigil override clear [flags] ID | -check ID | -drain ZONE/NAME/TYPE/VALUE", example: "vigil override clear -check web-us"},
		}}
}

// dnssecCommand is the entry of vigil dnssec, with its subcommands.
func dnssecCommand() command {
	return command{name: "dnssec", summary: "print a signed zone's DS records for its parent, list its keys, roll them over", run: runDNSSEC,
		usage:   "vigil dnssec ds|keys|rollover [flags] ZONE",
		example: "vigil dnssec ds example.com.",
		subs: []command{
			{name: "ds", summary: "print the DS records to give the parent zone", usage: "vigil dnssec ds [flags] ZONE", example: "vigil dnssec ds example.com."},
			{name: "keys", summary: "list every key of a zone: tag, role, state, timeline", usage: "vigil dnssec keys [flags] ZONE", example: "vigil dnssec keys example.com."},
			{name: "rollover", summary: "start a key rollover, or finish a KSK or CSK one", usage: "vigil dnssec rollover [-role zsk|ksk|csk] [-finish [-force]] [flags] ZONE",
				example: "vigil dnssec rollover -role ksk example.com.\nvigil dnssec rollover -role ksk -finish example.com."},
		}}
}

// tsigCommand is the entry of vigil tsig, with its subcommands.
func tsigCommand() command {
	return command{name: "tsig", summary: "store, list and delete the TSIG keys of zone transfers in the control plane (sealed; never shown)", run: runTSIG,
		usage:   "vigil tsig put|list|delete [flags] [NAME]",
		example: "vigil tsig put vigil-xfr. -secret-file tsig.secret",
		subs: []command{
			{name: "put", summary: "create or replace a key: the voter seals its secret with the DNSSEC seal secret",
				usage: "vigil tsig put NAME -secret-file FILE [-algorithm hmac-sha256|hmac-sha384|hmac-sha512] [flags]",
				detail: "FILE holds the base64 secret, or a key line as vigil agent -tsig-keys-file takes\n" +
					"([algorithm:]name:secret). The voter refuses (422) a weaker algorithm, a secret of fewer\n" +
					"than 16 bytes, a name that is not a domain name, and any key when it has no\n" +
					"-dnssec-secret-file. Locations open the key with the same -dnssec-secret-file.",
				example: "head -c 32 /dev/urandom | base64 > tsig.secret\nvigil tsig put vigil-xfr. -secret-file tsig.secret"},
			{name: "list", summary: "list the keys: name, algorithm, and (set) for the secret", usage: "vigil tsig list [flags]", example: "vigil tsig list"},
			{name: "delete", summary: "delete a key", usage: "vigil tsig delete NAME [flags]", example: "vigil tsig delete vigil-xfr."},
		}}
}

// loadCommand is the entry of vigil load, with its subcommands.
func loadCommand() command {
	return command{name: "load", summary: "generate load: concurrent writes on the control plane, or a synthetic configuration of any size", run: runLoad,
		usage:   "vigil load writes|document [flags]",
		example: "vigil load writes -clients 8 -duration 30s\nvigil load document -checks 10000 > big.yaml",
		subs: []command{
			{name: "writes", summary: "concurrent writes on the control plane's API, with their latency", usage: "vigil load writes [flags]", example: "vigil load writes -clients 8 -duration 30s -server http://127.0.0.1:7700"},
			{name: "document", summary: "print a synthetic configuration of any size", usage: "vigil load document [flags]", example: "vigil load document -checks 10000 -regions us-east,eu-west > big.yaml"},
		}}
}

// simCommand is the entry of vigil sim, with its subcommands.
func simCommand() command {
	return command{name: "sim", summary: "run a fault scenario on an in-process network and check every DNS answer it gave", run: runSim,
		usage:   "vigil sim [flags] SCENARIO\nvigil sim [flags] -script FILE\nvigil sim chaos [-seed N] [-duration 60s]\nvigil sim ddos [flags]\nvigil sim -real [flags] SCENARIO",
		detail:  "Scenarios: " + simScenarioList() + ".",
		example: "vigil sim partition",
		subs: []command{
			{name: "ddos", summary: "a query flood at one zone's virtual name servers, sharded and not", usage: "vigil sim [-log-level level] ddos [flags]", example: "vigil sim ddos -rate 50000 -flood 10s"},
			{name: "-real", summary: "a scenario on real processes in network namespaces (needs root, ip, nft, /dev/net/tun)", usage: "vigil sim -real [flags] SCENARIO\nvigil sim -real [flags] -script FILE",
				detail: "Scenarios: " + realScenarioList() + ".", example: "sudo vigil sim -real isolated -keep /tmp/run"},
		}}
}

// recoverCommand is the entry of vigil recover, with its details.
func recoverCommand() command {
	return command{name: "recover", summary: "make a stopped voter the only voter of its cluster, when a majority of voters is lost for good", run: runRecover,
		usage: "vigil recover -majority-lost -data-dir DIR -id ID -raft-addr ADDR",
		detail: "Run it with every voter stopped, on the one voter whose state to keep (the one with the\n" +
			"highest raft index, if several survive). It keeps the voter's whole log and snapshots and\n" +
			"makes it the only member of the raft configuration; entries it held that the lost majority\n" +
			"had not committed become committed. Then start its agent as before, without -bootstrap,\n" +
			"start new voters with -join, and remove the lost ones with vigil voters remove.",
		example: "vigil recover -majority-lost -data-dir /var/lib/vigil -id c1 -raft-addr 10.0.1.1:7000"}
}

// routerCommand is the entry of vigil router, with its subcommands.
func routerCommand() command {
	return command{name: "router", summary: "run a region's router of the compose demo (latency, loss, cuts between regions)", run: runRouter,
		usage: "vigil router -region R -src ADDR -listen ADDR:PORT -peer REGION,SUBNET,ENDPOINT,LATENCY ... [flags]\nvigil router ctl [flags] COMMAND",
		detail: "It routes the peers' subnets through a TUN device (CAP_NET_ADMIN, /dev/net/tun) and carries\n" +
			"their packets over UDP to the peer routers, with each link's latency and the faults in force.",
		example: "vigil router -region us-east -src 10.1.0.1 -listen 172.20.0.2:4789 -peer eu-west,10.2.0.0/16,172.20.0.3:4789,40ms",
		subs: []command{
			{name: "ctl", summary: "send one command to a router's control API", usage: "vigil router ctl [flags] links | stats | cut R | cut A B | cut-oneway FROM TO | latency A B DUR | loss A B PCT | heal",
				example: "vigil router ctl cut us-east eu-west"},
		}}
}

// shardCommand is the entry of vigil shard, with its subcommands.
func shardCommand() command {
	return command{name: "shard", summary: "analyse the blast radius of shuffle shards (vigil shard analyze)", run: runShard,
		usage:   "vigil shard analyze -f FILE (--check ID | --zone NAME) [flags]",
		example: "vigil shard analyze -f examples/demo.yaml -check web-us",
		subs: []command{
			{name: "analyze", summary: "how many checkers or name servers a check or zone shares with the others", usage: "vigil shard analyze -f FILE (--check ID | --zone NAME) [flags]",
				detail: "For one check (or zone): which other checks (zones) share how many of its checkers (name\n" +
					"servers), the distribution of those overlaps, and how many would lose every worker if its\n" +
					"shard were poisoned. Membership is synthesised (--checkers-per-region N checkers in each\n" +
					"region, the default) or read from a YAML file mapping each region to its checker ids\n" +
					"(--membership FILE).",
				example: "vigil shard analyze -f examples/demo.yaml -zone demo.vigil.test. -extra 1000"},
		}}
}

// tlsCommand is the entry of vigil tls, with its subcommands.
func tlsCommand() command {
	return command{name: "tls", summary: "create a CA and node certificates for mutual TLS (vigil tls init)", run: runTLS,
		usage:   "vigil tls init [flags] DIR NAME=ROLE[+ROLE...][@HOST,...]...",
		example: "vigil tls init pki control-1=control node-1=checker+location@10.0.0.5 ops=operator",
		subs: []command{
			{name: "init", summary: "write a CA (unless DIR has one) and a certificate and key for each NAME", usage: "vigil tls init [flags] DIR NAME=ROLE[+ROLE...][@HOST,...]...",
				detail: "Writes DIR/ca.pem and DIR/ca-key.pem unless DIR has them, and for each NAME DIR/NAME.pem and\n" +
					"DIR/NAME-key.pem, ECDSA P-256, for server and client use. Roles: control (raft voters),\n" +
					"checker, location, operator (vigil apply, vigil keyring). Run again with the same DIR to\n" +
					"renew certificates under the same CA.",
				example: "vigil tls init pki control-1=control control-2=control node-1=checker+location@10.0.0.5 ops=operator"},
		}}
}

// tokenCommand is the entry of vigil token, with its subcommands.
func tokenCommand() command {
	return command{name: "token", summary: "create a named API token with a scope (vigil token create)", run: runToken,
		usage:   "vigil token create -name NAME -scope SCOPE",
		example: "vigil token create -name alice -scope write:check=web-,zone=example.com.",
		subs: []command{
			{name: "create", summary: "print a new token's secret and the line for the voters' -token-file", usage: "vigil token create -name NAME [-scope read|write|write:check=PREFIX,zone=NAME] [-secret-file FILE]",
				example: "vigil token create -name ci -scope write -secret-file ci.token >> tokens"},
		}}
}

// votersCommand is the entry of vigil voters, with its subcommands.
func votersCommand() command {
	return command{name: "voters", summary: "list the control plane's voters, or remove one that is gone", run: runVoters,
		usage:   "vigil voters list|remove [flags] [ID]",
		example: "vigil voters list\nvigil voters remove c3",
		subs: []command{
			{name: "list", summary: "each voter: id, raft address, API URL, leader or follower", usage: "vigil voters list [flags]", example: "vigil voters list -server https://c1:7100"},
			{name: "remove", summary: "remove a voter from the raft configuration and the state (audited)", usage: "vigil voters remove [flags] ID", example: "vigil voters remove c3"},
		}}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run dispatches args to a command and returns the process exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stdout)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help":
		usage(stdout)
		return exitOK
	case "help":
		if len(args) == 1 {
			usage(stdout)
			return exitOK
		}
		// vigil help CMD [SUB...] is vigil CMD [SUB...] -h.
		return run(ctx, append(append([]string(nil), args[1:]...), "-h"), stdout, stderr)
	case "-version", "--version":
		return runVersion(ctx, nil, stdout, stderr)
	}
	var names []string
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, args[1:], stdout, stderr)
		}
		names = append(names, c.name)
	}
	fmt.Fprintf(stderr, "vigil: unknown command %q%s\n\n", args[0], didYouMean(args[0], names))
	usage(stderr)
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "Vigil: health checks with quorum across regions, answered in DNS.\n\nUsage: vigil COMMAND [flags] [ARGS]\n\nCommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-12s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun vigil help COMMAND (or vigil COMMAND -h) for a command's flags and an example;\nvigil --version for the build.")
}
