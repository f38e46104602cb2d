package readcache

import (
	"testing"
	"time"
)

func TestTTL(t *testing.T) {
	tests := []struct {
		name string
		run  func(c *TTL[string, int]) (int, bool)
		want int
		ok   bool
	}{
		{"empty", func(c *TTL[string, int]) (int, bool) { return c.Get("a") }, 0, false},
		{"put then get", func(c *TTL[string, int]) (int, bool) {
			c.Put("a", 1, c.Generation(), time.Minute)
			return c.Get("a")
		}, 1, true},
		{"expired", func(c *TTL[string, int]) (int, bool) {
			c.Put("a", 1, c.Generation(), -time.Millisecond)
			return c.Get("a")
		}, 0, false},
		{"invalidated", func(c *TTL[string, int]) (int, bool) {
			c.Put("a", 1, c.Generation(), time.Minute)
			c.Invalidate()
			return c.Get("a")
		}, 0, false},
		{"a read begun before an invalidation is not cached", func(c *TTL[string, int]) (int, bool) {
			gen := c.Generation()
			c.Invalidate() // a write committed while the store was read
			c.Put("a", 1, gen, time.Minute)
			return c.Get("a")
		}, 0, false},
		{"full: emptied, then the new entry kept", func(c *TTL[string, int]) (int, bool) {
			c.Max = 2
			c.Put("a", 1, 0, time.Minute)
			c.Put("b", 2, 0, time.Minute)
			c.Put("c", 3, 0, time.Minute)
			if _, ok := c.Get("a"); ok {
				return -1, true
			}
			return c.Get("c")
		}, 3, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c TTL[string, int]
			got, ok := tt.run(&c)
			if got != tt.want || ok != tt.ok {
				t.Fatalf("got %d, %v; want %d, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}
