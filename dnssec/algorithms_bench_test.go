package dnssec

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"runtime"
	"syscall"
	"testing"
)

// threadCPU returns the CPU time of the calling OS thread (user and system, nanoseconds).
func threadCPU(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_THREAD, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkSignAlgorithms measures what one signature costs in CPU time (cpu-ns/op, the
// thread's own, which neighbours on a shared machine do not inflate as they do wall time)
// with the algorithm Vigil signs with, ECDSA P-256 (13), and with Ed25519 (15), over a
// message of the size an NSEC black lie's RRSIG signs: whether a second algorithm would make
// a flood of new names cheaper.
func BenchmarkSignAlgorithms(b *testing.B) {
	msg := make([]byte, 120)
	b.Run("ecdsa-p256", func(b *testing.B) {
		priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			b.Fatal(err)
		}
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		c0 := threadCPU(b)
		for b.Loop() {
			digest := sha256.Sum256(msg)
			if _, _, err := ecdsa.Sign(rand.Reader, priv, digest[:]); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(threadCPU(b)-c0)/float64(b.N), "cpu-ns/op")
	})
	b.Run("ed25519", func(b *testing.B) {
		_, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			b.Fatal(err)
		}
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		c0 := threadCPU(b)
		for b.Loop() {
			_ = ed25519.Sign(priv, msg)
		}
		b.ReportMetric(float64(threadCPU(b)-c0)/float64(b.N), "cpu-ns/op")
	})
}
