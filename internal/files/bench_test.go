package files_test

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/parley-bots/parley/internal/blob"
	"github.com/parley-bots/parley/internal/files"
	"github.com/parley-bots/parley/internal/model"
	"github.com/parley-bots/parley/internal/store"
	"github.com/parley-bots/parley/internal/store/postgres"
	"github.com/parley-bots/parley/internal/testutil/testdb"
)

// pgURL is the benchmark's PostgreSQL database (for ANALYZE).
var pgURL string

// TestKnowledgeBenchmark measures indexing throughput (passages/s: read,
// extract, split, stem, store with the full-text index) and searchFiles
// latency over 10,000 paragraph passages (100 Markdown files of 100
// paragraphs, Zipf-distributed words), on each engine (README,
// "Performance"). On PostgreSQL the search runs after ANALYZE.
//
//	PARLEY_BENCH=1 go test -run TestKnowledgeBenchmark -v -count=1 ./internal/files/
func TestKnowledgeBenchmark(t *testing.T) {
	if os.Getenv("PARLEY_BENCH") != "1" {
		t.Skip("set PARLEY_BENCH=1")
	}
	for _, engine := range []struct {
		name string
		open func(testing.TB) store.DB
	}{{"sqlite", testdb.SQLite}, {"postgres", func(t testing.TB) store.DB {
		pgURL = testdb.PostgresURL(t)
		db, err := postgres.Open(context.Background(), pgURL)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}}} {
		t.Run(engine.name, func(t *testing.T) {
			ctx := context.Background()
			db := engine.open(t)
			bot := benchBot(t, db)
			api := files.NewAPI(db, blob.DB{Files: db.Files()}, "http://localhost", files.Models{}, nil)
			r := rand.New(rand.NewSource(14))
			words := vocabulary(r, 5000)
			zipf := rand.NewZipf(r, 1.1, 2, uint64(len(words)-1))
			sentence := func(n int) string {
				ws := make([]string, n)
				for i := range ws {
					ws[i] = words[zipf.Uint64()]
				}
				return strings.Join(ws, " ")
			}
			const nFiles, nParagraphs = 100, 100
			for i := range nFiles {
				var sb strings.Builder
				fmt.Fprintf(&sb, "# Document %d\n\n", i)
				for j := range nParagraphs {
					if j%10 == 0 {
						fmt.Fprintf(&sb, "## %s\n\n", sentence(3))
					}
					sb.WriteString(sentence(40) + ".\n\n")
				}
				f := &model.File{BotID: bot, ID: fmt.Sprintf("file_%03d", i), Key: fmt.Sprintf("doc%03d.md", i), ContentType: "text/markdown",
					Size: int64(sb.Len()), Index: true, Status: model.FileIndexingPending}
				if err := db.Files().CreateFile(ctx, f); err != nil {
					t.Fatal(err)
				}
				if err := db.Files().PutBlob(ctx, bot, f.ID, []byte(sb.String())); err != nil {
					t.Fatal(err)
				}
			}
			start := time.Now()
			for api.Indexer.RunOnce(ctx) > 0 {
			}
			took := time.Since(start)
			passages, paragraphs := 0, 0
			for i := range nFiles {
				ps, err := db.Files().ListPassages(ctx, bot, fmt.Sprintf("file_%03d", i), -1, 1000)
				if err != nil {
					t.Fatal(err)
				}
				passages += len(ps)
				for _, p := range ps {
					if p.Subtype == "paragraph" {
						paragraphs++
					}
				}
			}
			if paragraphs != nFiles*nParagraphs {
				t.Fatalf("%d paragraph passages, want %d", paragraphs, nFiles*nParagraphs)
			}
			t.Logf("%s: indexed %d files, %d passages (%d paragraphs) in %s: %.0f passages/s",
				engine.name, nFiles, passages, paragraphs, took.Round(time.Millisecond), float64(passages)/took.Seconds())

			if engine.name == "postgres" {
				// The statistics autovacuum gathers within about a minute
				// of a bulk indexing; without them the planner scans the
				// bot's rows instead of using the GIN index.
				conn, err := pgx.Connect(ctx, pgURL)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := conn.Exec(ctx, "ANALYZE file_passages"); err != nil {
					t.Fatal(err)
				}
				conn.Close(ctx)
			}
			// Two query sets: words drawn like the text's (Zipf: most
			// queries hold a word of nearly every passage, the worst case)
			// and words drawn uniformly from the vocabulary (rarer words, as
			// content words of a question once stop words are dropped).
			caller := files.Caller{BotID: bot, Bot: true}
			for _, set := range []struct {
				name string
				word func() string
			}{
				{"Zipf words", func() string { return words[zipf.Uint64()] }},
				{"uniform words", func() string { return words[r.Intn(len(words))] }},
			} {
				var times []time.Duration
				found := 0
				for range 300 {
					q := set.word() + " " + set.word() + " " + set.word()
					s := time.Now()
					res, err := api.Passages.Search(ctx, caller, files.SearchInput{Query: q, Limit: 10, IncludeBreadcrumb: true})
					if err != nil {
						t.Fatal(err)
					}
					times = append(times, time.Since(s))
					if len(res) > 0 {
						found++
					}
				}
				sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
				t.Logf("%s: searchFiles (3 %s, limit 10) over %d passages: p50 %s, p99 %s over %d queries (%d found passages)",
					engine.name, set.name, passages, times[len(times)/2].Round(10*time.Microsecond), times[len(times)*99/100].Round(10*time.Microsecond), len(times), found)
			}
		})
	}
}

// vocabulary makes n distinct pronounceable words.
func vocabulary(r *rand.Rand, n int) []string {
	cons, vows := "bcdfghjklmnprstvz", "aeiou"
	seen := map[string]bool{}
	var out []string
	for len(out) < n {
		var sb strings.Builder
		for range 2 + r.Intn(3) {
			sb.WriteByte(cons[r.Intn(len(cons))])
			sb.WriteByte(vows[r.Intn(len(vows))])
		}
		if w := sb.String(); !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

func benchBot(t testing.TB, db store.DB) string {
	ctx := context.Background()
	a := &model.Account{Email: model.NewID() + "@example.com"}
	if err := db.Accounts().Create(ctx, a); err != nil {
		t.Fatal(err)
	}
	w := &model.Workspace{Name: "ws", OwnerID: a.ID, Handle: "h" + strings.ToLower(a.ID[len(a.ID)-10:])}
	if err := db.Workspaces().Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	b := &model.Bot{WorkspaceID: w.ID, Name: "bot", Type: model.DefaultBotType}
	if err := db.Bots().Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	return b.ID
}
