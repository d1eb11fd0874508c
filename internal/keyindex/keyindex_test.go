package keyindex

import (
	"math/rand/v2"
	"runtime"
	"strconv"
	"testing"
)

// table is a caller's table: places to keys, with free places reused.
type table struct {
	keys []string
	free []int32
}

func (t *table) add(k string) int32 {
	if n := len(t.free); n > 0 {
		p := t.free[n-1]
		t.free = t.free[:n-1]
		t.keys[p] = k
		return p
	}
	t.keys = append(t.keys, k)
	return int32(len(t.keys) - 1)
}

// TestIndexMatchesMap drives an index and a map with the same random puts, gets and deletes
// (over few keys, so that probes run into each other and deletions shift entries) and
// compares every answer.
func TestIndexMatchesMap(t *testing.T) {
	for _, keys := range []int{5, 50, 3000} {
		rng := rand.New(rand.NewPCG(1, uint64(keys)))
		tab := &table{}
		x := New(func(p int32) string { return tab.keys[p] })
		want := map[string]int32{}
		for op := range 200_000 {
			k := "check-" + strconv.Itoa(rng.IntN(keys))
			switch rng.IntN(3) {
			case 0:
				if _, ok := want[k]; !ok {
					p := tab.add(k)
					x.Put(k, p)
					want[k] = p
				}
			case 1:
				p, ok := x.Delete(k)
				wp, wok := want[k]
				if ok != wok || ok && p != wp {
					t.Fatalf("keys %d op %d: Delete(%q) = %d, %v; want %d, %v", keys, op, k, p, ok, wp, wok)
				}
				if ok {
					delete(want, k)
					tab.keys[p] = ""
					tab.free = append(tab.free, p)
				}
			default:
				p, ok := x.Get(k)
				wp, wok := want[k]
				if ok != wok || ok && p != wp {
					t.Fatalf("keys %d op %d: Get(%q) = %d, %v; want %d, %v", keys, op, k, p, ok, wp, wok)
				}
			}
			if x.Len() != len(want) {
				t.Fatalf("keys %d op %d: Len %d, want %d", keys, op, x.Len(), len(want))
			}
		}
		for k, wp := range want {
			if p, ok := x.Get(k); !ok || p != wp {
				t.Fatalf("keys %d: Get(%q) = %d, %v at the end; want %d", keys, k, p, ok, wp)
			}
		}
	}
}

// TestLargePlaces: places that need more of a slot's bits than the index gave them are found
// again, with every key placed before, down to places that leave no bit for a tag.
func TestLargePlaces(t *testing.T) {
	keys := map[int32]string{}
	x := New(func(p int32) string { return keys[p] })
	places := []int32{0, 1, 200, 255, 256, 70_000, 1 << 20, 1<<24 + 3, 1<<30 + 5, 1<<31 - 1}
	for i, p := range places {
		keys[p] = "k" + strconv.Itoa(int(p))
		x.Put(keys[p], p)
		for _, q := range places[:i+1] {
			if got, ok := x.Get(keys[q]); !ok || got != q {
				t.Fatalf("after placing %d: Get(%q) = %d, %v", p, keys[q], got, ok)
			}
		}
	}
	for _, p := range places {
		if got, ok := x.Delete(keys[p]); !ok || got != p {
			t.Fatalf("Delete(%q) = %d, %v", keys[p], got, ok)
		}
	}
	if x.Len() != 0 {
		t.Fatalf("%d keys left", x.Len())
	}
}

// TestPutMovesPlace: a second Put of a key moves it to the new place, not adding it twice.
func TestPutMovesPlace(t *testing.T) {
	keys := []string{"a", "b", "a"}
	x := New(func(p int32) string { return keys[p] })
	x.Put("a", 0)
	x.Put("b", 1)
	x.Put("a", 2)
	if p, ok := x.Get("a"); !ok || p != 2 || x.Len() != 2 {
		t.Fatalf("Get(a) = %d, %v with %d keys; want 2, true with 2", p, ok, x.Len())
	}
	x.Reset()
	if _, ok := x.Get("a"); ok || x.Len() != 0 {
		t.Fatal("Reset left a key")
	}
}

// TestIndexBytesPerKey bounds what the index costs a key at a million keys, against the
// 56 bytes of a Go map[string]int32 (measured at 1,000,000 keys, Go 1.26).
func TestIndexBytesPerKey(t *testing.T) {
	if testing.Short() {
		t.Skip("a million keys")
	}
	const n = 1_000_000
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "check-" + strconv.Itoa(i)
	}
	before := heapLive()
	x := New(func(p int32) string { return keys[p] })
	for i, k := range keys {
		x.Put(k, int32(i))
	}
	per := float64(heapLive()-before) / n
	runtime.KeepAlive(x)
	t.Logf("%.1f bytes a key (%d in the table)", per, x.Bytes())
	if per > 9 {
		t.Fatalf("%.1f bytes a key, want at most 9", per)
	}
}

func heapLive() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func BenchmarkGet(b *testing.B) {
	const n = 1 << 20
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "check-" + strconv.Itoa(i)
	}
	x := New(func(p int32) string { return keys[p] })
	for i, k := range keys {
		x.Put(k, int32(i))
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, ok := x.Get(keys[i&(n-1)]); !ok {
			b.Fatal("missing")
		}
	}
}

func BenchmarkMapGet(b *testing.B) {
	const n = 1 << 20
	keys := make([]string, n)
	m := make(map[string]int32)
	for i := range keys {
		keys[i] = "check-" + strconv.Itoa(i)
		m[keys[i]] = int32(i)
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, ok := m[keys[i&(n-1)]]; !ok {
			b.Fatal("missing")
		}
	}
}
