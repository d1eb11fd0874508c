package shard

import (
	"slices"
	"strconv"
)

// ketama is the comparison structure for the benchmarks: a consistent-hash ring with a number
// of points per member (NGINX and pingora-ketama use 160), each point 8 bytes: its 32-bit
// position in the high half and the member's number in the low half, so that sorting the
// words sorts the ring. A key belongs to the first point at or after its position, and a
// shard of k to the first k distinct members met walking on round the ring.
type ketama struct {
	ids    []string
	points []uint64
}

func newKetama(members []string, perMember int) *ketama {
	ids := slices.Clone(members)
	slices.Sort(ids)
	r := &ketama{ids: ids, points: make([]uint64, 0, len(ids)*perMember)}
	for m, id := range ids {
		for i := range perMember {
			pos := hashString(id+"-"+strconv.Itoa(i)) >> 32
			r.points = append(r.points, pos<<32|uint64(m))
		}
	}
	slices.Sort(r.points)
	return r
}

// appendShard appends the positions of the first k distinct members at or after key's place
// on the ring.
func (r *ketama) appendShard(dst []int32, key uint64, k int) []int32 {
	k = min(k, len(r.ids))
	start := len(dst)
	pos := key >> 32 << 32
	i, _ := slices.BinarySearch(r.points, pos)
	for n := 0; n < len(r.points) && len(dst)-start < k; n++ {
		m := int32(r.points[(i+n)%len(r.points)] & 0xffffffff)
		if !slices.Contains(dst[start:], m) {
			dst = append(dst, m)
		}
	}
	return dst
}

// loads counts how many of keys' k-shards each member holds on the ring.
func (r *ketama) loads(keys []uint64, k int) []int {
	counts := make([]int, len(r.ids))
	var buf []int32
	for _, key := range keys {
		buf = r.appendShard(buf[:0], key, k)
		for _, m := range buf {
			counts[m]++
		}
	}
	return counts
}
