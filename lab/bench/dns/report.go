package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// targetRate is the offered rate of the latency target: p99 under targetP99 there.
const (
	targetRate = 50000
	targetP99  = time.Millisecond
)

// table returns the Markdown tables: the saturation runs, then per mix and server the median
// and range over the rounds with each server's medians as a multiple of Knot's; the
// fixed-rate runs, then per offered rate and server their summary; last, the targets checked
// side by side.
func table(res []result, o options) string {
	var b strings.Builder
	fmt.Fprintf(&b, "dnsperf -c %d, %v a run, %d rounds; at saturation -q %d; at fixed rates -Q RATE -q %d on the %s mix; NSD server-count, Knot udp-workers and Vigil's GOMAXPROCS %d; %d names; loopback\n\n",
		o.clients, o.duration, o.rounds, o.outstanding, o.rateOutstanding, o.rateMix, o.workers, o.names)
	servers := serverOrder(res, o)
	sat := map[string]float64{} // round, mix, server → qps at saturation
	for _, r := range res {
		if r.offered == 0 {
			sat[fmt.Sprint(r.round, r.mix, r.server)] = r.qps
		}
	}
	saturation := func(r result) (float64, bool) {
		q, ok := sat[fmt.Sprint(r.round, r.mix, r.server)]
		return q, ok
	}
	if len(o.mixes) > 0 {
		saturationTables(&b, res, o, servers)
	}
	if len(o.rates) > 0 {
		rateTables(&b, res, o, servers, saturation)
	}
	targets(&b, res, o, servers, saturation)
	return b.String()
}

// serverOrder returns the servers measured, in the order -servers names them (every vigil
// binary where it names vigil).
func serverOrder(res []result, o options) []string {
	var out []string
	for _, s := range o.servers {
		for _, r := range res {
			if (r.server == s || s == "vigil" && strings.HasPrefix(r.server, "vigil")) && !slices.Contains(out, r.server) {
				out = append(out, r.server)
			}
		}
	}
	return out
}

// saturationTables writes every saturation run, then per mix and server the medians.
func saturationTables(b *strings.Builder, res []result, o options, servers []string) {
	fmt.Fprintln(b, "At saturation (dnsperf sends as fast as answers come back):")
	fmt.Fprintln(b)
	fmt.Fprintln(b, "| round | mix | server | qps | queries per server CPU-second | server CPU s | p99 | lost | load | flips seen |")
	fmt.Fprintln(b, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	for _, r := range res {
		if r.offered != 0 {
			continue
		}
		flips := ""
		if r.mix == "flip" {
			if r.flips > 0 {
				flips = fmt.Sprintf("%d/%d", r.flipped, r.flips)
				if len(r.seen) > 0 {
					seen := slices.Sorted(slices.Values(r.seen))
					flips += fmt.Sprintf(" (median %v)", seen[len(seen)/2].Round(100*time.Microsecond))
				}
			} else {
				flips = "static"
			}
		}
		fmt.Fprintf(b, "| %d | %s | %s | %.0f | %.0f | %.2f | %s | %d | %s | %s |\n", r.round, r.mix, r.server, r.qps, r.perCPU(), r.cpu, ms(r.p99), r.sent-r.done, r.load, flips)
	}
	fmt.Fprintln(b)
	fmt.Fprintln(b, "| mix | server | qps, median (range) | queries per CPU-second, median (range) | p99, median | vs Knot: qps, per CPU-second |")
	fmt.Fprintln(b, "| --- | --- | --- | --- | --- | --- |")
	for _, mix := range o.mixes {
		sums := summarize(res, func(r result) bool { return r.offered == 0 && r.mix == mix })
		for _, srv := range servers {
			s := sums[srv]
			if s == nil {
				continue
			}
			vs := ""
			if k := sums["knot"]; k != nil && srv != "knot" && median(k.qps) > 0 && median(k.per) > 0 {
				vs = fmt.Sprintf("%.2f×, %.2f×", median(s.qps)/median(k.qps), median(s.per)/median(k.per))
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s |\n", mix, srv, spread(s.qps), spread(s.per),
				ms(s.p99[len(s.p99)/2]), vs)
		}
	}
	fmt.Fprintln(b)
}

// rateTables writes every fixed-rate run, then per offered rate and server the medians, the
// rounds under the latency target and the queries lost below saturation.
func rateTables(b *strings.Builder, res []result, o options, servers []string, saturation func(result) (float64, bool)) {
	fmt.Fprintf(b, "At fixed offered rates (dnsperf -Q), the %s mix; \"below saturation\": the rate is under the qps the same server reached on the same mix in the same round at saturation:\n\n", o.rateMix)
	fmt.Fprintln(b, "| round | offered | server | sent/s | qps | queries per server CPU-second | p50 | p99 | p99.9 | lost | dropped at the server's sockets | below saturation | load |")
	fmt.Fprintln(b, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	for _, r := range res {
		if r.offered == 0 {
			continue
		}
		below := "?"
		if q, ok := saturation(r); ok {
			below = fmt.Sprintf("%s (%.0f)", yesNo(float64(r.offered) < q), q)
		}
		drops := "?"
		if r.drops >= 0 {
			drops = strconv.Itoa(r.drops)
		}
		fmt.Fprintf(b, "| %d | %d | %s | %.0f | %.0f | %.0f | %s | %s | %s | %d | %s | %s | %s |\n", r.round, r.offered, r.server,
			r.sentRate(), r.qps, r.perCPU(), ms(r.p50), ms(r.p99), ms(r.p999), r.sent-r.done, drops, below, r.load)
	}
	fmt.Fprintln(b)
	fmt.Fprintf(b, "| offered | server | qps, median (range) | queries per CPU-second, median (range) | p99, median (range) | rounds with p99 < %v | lost below saturation | lost at or over saturation |\n", targetP99)
	fmt.Fprintln(b, "| --- | --- | --- | --- | --- | --- | --- | --- |")
	for _, rate := range o.rates {
		sums := summarize(res, func(r result) bool { return r.offered == rate })
		for _, srv := range servers {
			s := sums[srv]
			if s == nil {
				continue
			}
			under := 0
			for _, p := range s.p99 {
				if p > 0 && p < targetP99 {
					under++
				}
			}
			fmt.Fprintf(b, "| %d | %s | %s | %s | %s (%s–%s) | %d/%d | %s | %s |\n", rate, srv,
				spread(s.qps), spread(s.per), ms(s.p99[len(s.p99)/2]), ms(s.p99[0]), ms(s.p99[len(s.p99)-1]), under, len(s.p99),
				lostWhere(res, srv, rate, saturation, true), lostWhere(res, srv, rate, saturation, false))
		}
	}
	fmt.Fprintln(b)
}

// lostWhere sums the queries lost by srv's runs at rate below saturation (or at or over it):
// "0 of 1500000 (3 runs)", "-" for no such run.
func lostWhere(res []result, srv string, rate int, saturation func(result) (float64, bool), below bool) string {
	lost, sent, runs := 0, 0, 0
	for _, r := range res {
		if r.server != srv || r.offered != rate {
			continue
		}
		q, ok := saturation(r)
		if !ok || (float64(r.offered) < q) != below {
			continue
		}
		lost, sent, runs = lost+r.sent-r.done, sent+r.sent, runs+1
	}
	if runs == 0 {
		return "-"
	}
	return fmt.Sprintf("%d of %d (%d runs)", lost, sent, runs)
}

// targets writes the targets, checked for every server on this run's medians: queries per
// CPU-second at least 1.2× Knot's and qps at least Knot's on the hot and names mixes, p99
// under 1 ms at 50,000 queries a second offered, and no query lost below saturation.
func targets(b *strings.Builder, res []result, o options, servers []string, saturation func(result) (float64, bool)) {
	fmt.Fprintln(b, "Targets, on this run's medians (\"-\": not measured in this run):")
	fmt.Fprintln(b)
	fmt.Fprintf(b, "| server | hot: ≥ 1.2× Knot per CPU-second, ≥ Knot qps | names: ≥ 1.2× Knot per CPU-second, ≥ Knot qps | p99 < %v at %d offered | no query lost below saturation |\n", targetP99, targetRate)
	fmt.Fprintln(b, "| --- | --- | --- | --- | --- |")
	vsKnot := func(srv, mix string) string {
		sums := summarize(res, func(r result) bool { return r.offered == 0 && r.mix == mix })
		s, k := sums[srv], sums["knot"]
		if s == nil || k == nil || srv == "knot" || median(k.per) == 0 || median(k.qps) == 0 {
			return "-"
		}
		per, qps := median(s.per)/median(k.per), median(s.qps)/median(k.qps)
		return fmt.Sprintf("%.2f× %s, %.2f× %s", per, yesNo(per >= 1.2), qps, yesNo(qps >= 1))
	}
	for _, srv := range servers {
		latency := "-"
		if s := summarize(res, func(r result) bool { return r.offered == targetRate })[srv]; s != nil {
			p := s.p99[len(s.p99)/2]
			latency = fmt.Sprintf("%s %s", ms(p), yesNo(p > 0 && p < targetP99))
		}
		lost, runs := 0, 0
		for _, r := range res {
			if q, ok := saturation(r); ok && r.server == srv && r.offered > 0 && float64(r.offered) < q {
				lost, runs = lost+r.sent-r.done, runs+1
			}
		}
		lossless := "-"
		if runs > 0 {
			lossless = fmt.Sprintf("%d lost in %d runs %s", lost, runs, yesNo(lost == 0))
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", srv, vsKnot(srv, "hot"), vsKnot(srv, "names"), latency, lossless)
	}
}

// summary holds one mix's (or rate's) figures of one server over the rounds, each sorted.
type summary struct {
	qps, per []float64
	p99      []time.Duration
}

// summarize gathers, per server, the runs that keep selects.
func summarize(res []result, keep func(result) bool) map[string]*summary {
	sums := map[string]*summary{}
	for _, r := range res {
		if !keep(r) {
			continue
		}
		s := sums[r.server]
		if s == nil {
			s = &summary{}
			sums[r.server] = s
		}
		s.qps, s.p99 = append(s.qps, r.qps), append(s.p99, r.p99)
		// A run so starved that no clock tick of server CPU time was counted has no cost
		// per query to give.
		if r.cpu > 0 {
			s.per = append(s.per, r.perCPU())
		}
	}
	for _, s := range sums {
		slices.Sort(s.qps)
		slices.Sort(s.per)
		slices.Sort(s.p99)
	}
	return sums
}

// median of sorted values (the upper one of an even count), 0 of none.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	return v[len(v)/2]
}

// spread formats sorted values as "median (least–most)", "-" for none.
func spread(v []float64) string {
	if len(v) == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f (%.0f–%.0f)", median(v), v[0], v[len(v)-1])
}

func yesNo(ok bool) string {
	if ok {
		return "yes"
	}
	return "no"
}

// ms formats a latency in milliseconds, "-" when dnsperf printed no latencies.
func ms(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f ms", float64(d)/float64(time.Millisecond))
}
