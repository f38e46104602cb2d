package tables_test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/tables"
)

// TestFindRowsBenchmark times findTableRows with a filter and a sort over
// 100,000 rows on each engine (PARLEY_BENCH=1; README, Performance):
//
//	PARLEY_BENCH=1 go test -run TestFindRowsBenchmark -v -count=1 ./internal/tables/
func TestFindRowsBenchmark(t *testing.T) {
	if os.Getenv("PARLEY_BENCH") != "1" {
		t.Skip("set PARLEY_BENCH=1")
	}
	engines(t, func(t *testing.T, db store.DB) {
		ctx := context.Background()
		ts, rs, _ := tables.New(db, nil, tables.Limits{})
		bot := newBot(t, db)
		_, err := ts.Create(ctx, bot, tables.TableInput{Name: "OrdersTable", Schema: obj(`{"type":"object","properties":{
			"customer":{"type":"string"},"status":{"type":"string"},"total":{"type":"number"},"paid":{"type":"boolean"}}}`)})
		must(t, err)
		const n = 100_000
		statuses := []string{"new", "paid", "shipped", "delivered", "cancelled"}
		start := time.Now()
		for i := 0; i < n; i += 1000 {
			batch := make([]map[string]any, 1000)
			for j := range batch {
				k := i + j
				batch[j] = map[string]any{"customer": fmt.Sprintf("c%05d", k%5000), "status": statuses[k%5], "total": float64((k * 7919) % 100000 / 100), "paid": k%3 == 0}
			}
			_, err := rs.Create(ctx, bot, "OrdersTable", batch)
			must(t, err)
		}
		t.Logf("%s: inserted %d rows in %s", db.Engine(), n, time.Since(start).Round(time.Millisecond))
		limit := 50
		in := tables.FindInput{Limit: &limit, OrderBy: "total", OrderDirection: "desc",
			Filter: obj(`{"status":{"$in":["paid","shipped"]},"total":{"$gte":250},"paid":true}`)}
		var times []time.Duration
		for i := 0; i < 40; i++ {
			s := time.Now()
			res, err := rs.Find(ctx, bot, "OrdersTable", in)
			must(t, err)
			if len(res.Rows) != limit {
				t.Fatalf("%d rows", len(res.Rows))
			}
			times = append(times, time.Since(s))
		}
		sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
		t.Logf("%s: findTableRows (filter + sort, 100,000 rows, limit 50) p50 %s, p99 %s over %d queries",
			db.Engine(), times[len(times)/2].Round(time.Millisecond), times[len(times)*99/100].Round(time.Millisecond), len(times))
	})
}
