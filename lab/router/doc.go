// Package router is a region's router in the compose demo: it can delay, lose or cut each
// packet between regions, as an internet path would. Every packet between two regions'
// networks passes through the routers of both.
//
// Each region's containers share one network namespace with their router. The router
// creates a TUN device there and routes every other region's subnet through it; what the
// kernel sends into the device the router reads, holds for the link's latency and sends to
// the peer region's router inside a UDP datagram over a network shared by the routers only
// (the "wan"). The peer writes it into its own TUN device, where its kernel delivers it. The
// kernel this project runs on has no sch_netem, so latency is applied here, in user space,
// as netlab's wires do. Every router holds the same table of faults, by direction, and
// applies the entries whose packets it sends.
package router
