module github.com/vigil-dns/vigil/location/dnsbench

go 1.26.0

require (
	codeberg.org/miekg/dns v0.6.0
	github.com/miekg/dns v1.1.73
)

require (
	golang.org/x/crypto v0.54.0 // indirect
	golang.org/x/net v0.57.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
)
