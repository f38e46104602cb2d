// Package app assembles a Parley server from its configuration: store,
// service, realtime hub, bot runtime and HTTP routes.
package app

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/parley-bots/parley/internal/files"
	"github.com/parley-bots/parley/internal/httpapi/httpx"
	"github.com/parley-bots/parley/internal/llm"
	"github.com/parley-bots/parley/internal/realtime"
	"github.com/parley-bots/parley/internal/turns"
)

// Config is everything `parley serve` can be told, by flag or environment.
type Config struct {
	Addr        string
	DataDir     string
	DatabaseURL string
	PublicURL   string
	LogFormat   string // auto, text or json
	LogLevel    string // debug, info, warn, error
	// MetricsAddr, when set, serves GET /metrics on a listener of its own
	// (and not on Addr); empty serves it on Addr.
	MetricsAddr string
	Node        string // the Node.js executable that runs deployed bundles
	AdminToken  string // only from the environment: flags are visible in ps

	// Limits (README, "Limits"); zero values take the defaults (tests
	// build Configs by hand).
	BodyReadTimeout  time.Duration // reading one request, headers and body; SSE streams exempt
	MaxConnections   int           // concurrent client connections
	StreamsPerUser   int           // open SSE streams per chat user of a bot
	StreamsPerConv   int           // open SSE streams per conversation
	RatePerUser      float64       // Chat and Webchat API requests per second per user; < 0 = no limit
	RatePerBot       float64       // Chat and Webchat API requests per second per bot; < 0 = no limit
	DBMaxConnections int           // database pool size
	// DBWarmConnections is how many of PostgreSQL's pool connections are
	// opened and warmed before the node serves (postgres.DB.Warm); < 0:
	// the whole pool, 0: none (the zero Config, as tests use).
	DBWarmConnections int
	// GCHeadroomMB is the memory, in MiB, the heap may grow by between two
	// garbage collections while it is small (gctune); 0 keeps Go's GOGC.
	// `parley serve` applies it, and only when GOGC is not set.
	GCHeadroomMB int
	// MaxTurnDelay is how long the conversation first in line may wait for
	// a turn worker before users' new messages wait at the door, and half
	// how long they wait there before they are refused with 429 and
	// Retry-After (turns.Door); zero is automatic (twice a turn's
	// recent run, 30 ms to 1 s), negative never refuses.
	MaxTurnDelay time.Duration
	// TurnWorkers bounds how many conversations' turns run at once; zero
	// takes turns.DefaultWorkers (8 per core, 16 on PostgreSQL).
	TurnWorkers int
	// FoldWithin is how long a user's message may wait for its code bot's
	// answer to commit with it (turns.Dispatcher.Fold); zero or
	// negative: never.
	FoldWithin time.Duration
	// MaxMessagesInFlight bounds the users' messages being stored at once
	// (above it 429, turns.Door); zero takes turns.DefaultMaxInFlight,
	// negative has no bound.
	MaxMessagesInFlight int
	// Sync is SQLite's durability: "normal" (default: a commit survives a
	// crash of the process, the last ones may be lost on power loss) or
	// "full" (every commit is fsynced before it is answered).
	Sync string
	// LeaseTTL is the TTL of the leases that keep a conversation (and the
	// scheduler) on one node of several sharing PostgreSQL; zero takes
	// turns.DefaultLeaseTTL. A dead or stalled node is taken over about
	// this long after its last renewal.
	LeaseTTL time.Duration

	// Optional model endpoints (docs/files-api.md); empty URLs: none, and
	// nothing leaves the machine. Keys only from the environment.
	EmbeddingsURL   string // an OpenAI-compatible /v1/embeddings URL
	EmbeddingsModel string
	EmbeddingsKey   string
	AnswerURL       string // an OpenAI-compatible /v1/chat/completions URL
	AnswerModel     string
	AnswerKey       string
}

// models returns the Files API's model endpoints (zero when none is
// configured).
func (c Config) models() files.Models {
	var m files.Models
	if c.EmbeddingsURL != "" {
		m.Embedder = llm.Embedder{Endpoint: llm.Endpoint{URL: c.EmbeddingsURL, Model: c.EmbeddingsModel, APIKey: c.EmbeddingsKey}}
	}
	if c.AnswerURL != "" {
		m.Completer = llm.Generator{Endpoint: llm.Endpoint{URL: c.AnswerURL, Model: c.AnswerModel, APIKey: c.AnswerKey}}
	}
	return m
}

// Defaults of the limits.
const (
	DefaultBodyReadTimeout = 30 * time.Second
	DefaultMaxConnections  = 4096
	// DefaultGCHeadroomMB: see Config.GCHeadroomMB and the README's
	// performance section for the measurement.
	DefaultGCHeadroomMB = 64
)

// limitsOrDefaults fills the zero limits with their defaults.
func (c Config) limitsOrDefaults() Config {
	if c.BodyReadTimeout == 0 {
		c.BodyReadTimeout = DefaultBodyReadTimeout
	}
	if c.MaxConnections == 0 {
		c.MaxConnections = DefaultMaxConnections
	}
	if c.RatePerUser == 0 {
		c.RatePerUser = httpx.DefaultRatePerUser
	}
	if c.RatePerBot == 0 {
		c.RatePerBot = httpx.DefaultRatePerBot
	}
	return c
}

// LoadConfig parses serve's flags; each flag falls back to its environment
// variable, then to its default.
func LoadConfig(args []string, getenv func(string) string, stderr io.Writer) (Config, error) {
	var c Config
	var envErrs []error
	fs := flag.NewFlagSet("parley serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	env := func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}
	fs.StringVar(&c.Addr, "addr", env("PARLEY_ADDR", "127.0.0.1:3000"), "listen address (PARLEY_ADDR)")
	fs.StringVar(&c.DataDir, "data-dir", env("PARLEY_DATA_DIR", "./parley-data"), "directory for the SQLite database and the admin token (PARLEY_DATA_DIR)")
	fs.StringVar(&c.DatabaseURL, "database-url", env("PARLEY_DATABASE_URL", ""), "a postgres:// URL to use PostgreSQL instead of SQLite (PARLEY_DATABASE_URL)")
	fs.StringVar(&c.PublicURL, "public-url", env("PARLEY_PUBLIC_URL", ""), "base of the URLs shown to users; derived from --addr when unset (PARLEY_PUBLIC_URL)")
	fs.StringVar(&c.LogFormat, "log-format", env("PARLEY_LOG_FORMAT", "auto"), "log format: auto (text on a terminal, JSON otherwise), text or json (PARLEY_LOG_FORMAT)")
	fs.StringVar(&c.LogLevel, "log-level", env("PARLEY_LOG_LEVEL", "info"), "log level: debug, info, warn or error (PARLEY_LOG_LEVEL)")
	fs.StringVar(&c.MetricsAddr, "metrics-addr", env("PARLEY_METRICS_ADDR", ""), "serve /metrics on this address only (e.g. 127.0.0.1:9090); empty serves it on --addr (PARLEY_METRICS_ADDR)")
	fs.StringVar(&c.Node, "node", env("PARLEY_NODE", "node"), "Node.js executable that runs deployed SDK bot bundles (PARLEY_NODE)")
	intVar := func(p *int, name, envName string, def int, usage string) {
		fs.Func(name, usage+" ("+envName+", default "+strconv.Itoa(def)+")", func(v string) error {
			n, err := strconv.Atoi(v)
			*p = n
			return err
		})
		*p = def
		if v := getenv(envName); v != "" {
			envErrs = append(envErrs, fs.Set(name, v))
		}
	}
	floatVar := func(p *float64, name, envName string, def float64, usage string) {
		fs.Func(name, usage+" ("+envName+", default "+strconv.FormatFloat(def, 'f', -1, 64)+")", func(v string) error {
			f, err := strconv.ParseFloat(v, 64)
			*p = f
			return err
		})
		*p = def
		if v := getenv(envName); v != "" {
			envErrs = append(envErrs, fs.Set(name, v))
		}
	}
	fs.Func("read-timeout", "how long reading one request (headers and body) may take; SSE streams are exempt (PARLEY_READ_TIMEOUT, default 30s)", func(v string) error {
		d, err := time.ParseDuration(v)
		c.BodyReadTimeout = d
		return err
	})
	c.BodyReadTimeout = DefaultBodyReadTimeout
	if v := getenv("PARLEY_READ_TIMEOUT"); v != "" {
		envErrs = append(envErrs, fs.Set("read-timeout", v))
	}
	fs.Func("lease-ttl", "with several nodes on PostgreSQL: how long a node's hold on a conversation lasts unless renewed (4 times per TTL); a dead or stalled node is taken over about this long after its last renewal (PARLEY_LEASE_TTL, default 2s)", func(v string) error {
		d, err := time.ParseDuration(v)
		if err == nil && d < 200*time.Millisecond {
			err = errors.New("must be at least 200ms")
		}
		c.LeaseTTL = d
		return err
	})
	if v := getenv("PARLEY_LEASE_TTL"); v != "" {
		envErrs = append(envErrs, fs.Set("lease-ttl", v))
	}
	fs.Func("fold-within", "how long a user's message may wait for its code bot's answer, to be stored with it in one commit (on PostgreSQL, where this node holds the conversation's lease from its last run); the answer of a slower turn, or one that calls the Runtime API, is stored apart; 0: never (PARLEY_FOLD_WITHIN, default 5ms)", func(v string) error {
		d, err := time.ParseDuration(v)
		c.FoldWithin = d
		return err
	})
	c.FoldWithin = turns.DefaultFoldWithin
	if v := getenv("PARLEY_FOLD_WITHIN"); v != "" {
		envErrs = append(envErrs, fs.Set("fold-within", v))
	}
	fs.StringVar(&c.EmbeddingsURL, "embeddings-url", env("PARLEY_EMBEDDINGS_URL", ""), "an OpenAI-compatible /v1/embeddings URL for semantic search of knowledge bases (e.g. http://127.0.0.1:11434/v1/embeddings); empty: full-text search only, nothing leaves the machine; key: PARLEY_EMBEDDINGS_API_KEY (PARLEY_EMBEDDINGS_URL)")
	fs.StringVar(&c.EmbeddingsModel, "embeddings-model", env("PARLEY_EMBEDDINGS_MODEL", ""), "the model asked of --embeddings-url (PARLEY_EMBEDDINGS_MODEL)")
	fs.StringVar(&c.AnswerURL, "answer-url", env("PARLEY_ANSWER_URL", ""), "an OpenAI-compatible /v1/chat/completions URL that composes knowledge-base answers; empty: the best passage answers; key: PARLEY_ANSWER_API_KEY (PARLEY_ANSWER_URL)")
	fs.StringVar(&c.AnswerModel, "answer-model", env("PARLEY_ANSWER_MODEL", ""), "the model asked of --answer-url (PARLEY_ANSWER_MODEL)")
	fs.Func("max-turn-delay", "how long turns may wait for a worker before users' new messages wait at the door (at most twice as long, then refused with 429 and Retry-After); auto: twice a turn's recent run, 30ms to 1s; -1ns: never refuse (PARLEY_MAX_TURN_DELAY, default auto)", func(v string) error {
		if v == "auto" {
			c.MaxTurnDelay = 0
			return nil
		}
		d, err := time.ParseDuration(v)
		c.MaxTurnDelay = d
		return err
	})
	if v := getenv("PARLEY_MAX_TURN_DELAY"); v != "" {
		envErrs = append(envErrs, fs.Set("max-turn-delay", v))
	}
	fs.Func("sync", "SQLite durability: normal (a commit survives a crash of the process) or full (every commit is fsynced: survives power loss) (PARLEY_SYNC, default normal)", func(v string) error {
		if v != "normal" && v != "full" {
			return errors.New("must be normal or full")
		}
		c.Sync = v
		return nil
	})
	if v := getenv("PARLEY_SYNC"); v != "" {
		envErrs = append(envErrs, fs.Set("sync", v))
	}
	intVar(&c.TurnWorkers, "turn-workers", "PARLEY_TURN_WORKERS", 0, "conversations whose bot turns run at once; 0: automatic (8 per core on SQLite, 16 per core on PostgreSQL); raise it for bots that wait long on outside calls")
	intVar(&c.MaxMessagesInFlight, "max-messages-in-flight", "PARLEY_MAX_MESSAGES_IN_FLIGHT", 256, "users' messages (Chat and Webchat createMessage) being stored at once; more get 429 and Retry-After; -1: no bound")
	intVar(&c.MaxConnections, "max-connections", "PARLEY_MAX_CONNECTIONS", DefaultMaxConnections, "concurrent client connections; more wait to be accepted")
	intVar(&c.StreamsPerUser, "max-streams-per-user", "PARLEY_MAX_STREAMS_PER_USER", realtime.DefaultMaxStreamsPerUser, "open SSE streams per chat user")
	intVar(&c.StreamsPerConv, "max-streams-per-conversation", "PARLEY_MAX_STREAMS_PER_CONVERSATION", realtime.DefaultMaxStreamsPerConversation, "open SSE streams per conversation")
	floatVar(&c.RatePerUser, "rate-per-user", "PARLEY_RATE_PER_USER", httpx.DefaultRatePerUser, "Chat and Webchat API requests per second per user, bursts of twice that; -1: no limit")
	floatVar(&c.RatePerBot, "rate-per-bot", "PARLEY_RATE_PER_BOT", httpx.DefaultRatePerBot, "Chat, Webchat, Runtime API and webhook requests per second per bot, bursts of twice that; -1: no limit")
	intVar(&c.DBMaxConnections, "db-max-connections", "PARLEY_DB_MAX_CONNECTIONS", 0, "database pool size; 0: 64 on SQLite, 32 on PostgreSQL")
	intVar(&c.DBWarmConnections, "db-warm-connections", "PARLEY_DB_WARM_CONNECTIONS", -1, "PostgreSQL: pool connections opened before serving, each with the reads of a user's first message prepared and planned, so that a burst after a start does not plan them on every connection at once; -1: the whole pool, 0: none")
	intVar(&c.GCHeadroomMB, "gc-headroom-mb", "PARLEY_GC_HEADROOM_MB", DefaultGCHeadroomMB, "MiB the Go heap may grow by between garbage collections while it is smaller than that (fewer collections under load); 0, or GOGC set: Go's default")
	if err := errors.Join(envErrs...); err != nil {
		return c, fmt.Errorf("environment: %w", err)
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	c.AdminToken = getenv("PARLEY_ADMIN_TOKEN")
	c.EmbeddingsKey, c.AnswerKey = getenv("PARLEY_EMBEDDINGS_API_KEY"), getenv("PARLEY_ANSWER_API_KEY")
	return c, c.validate()
}

func (c *Config) validate() error {
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		return fmt.Errorf("--addr %q: %w", c.Addr, err)
	}
	if c.MetricsAddr != "" {
		if _, _, err := net.SplitHostPort(c.MetricsAddr); err != nil {
			return fmt.Errorf("--metrics-addr %q: %w", c.MetricsAddr, err)
		}
	}
	if c.DatabaseURL != "" && !strings.HasPrefix(c.DatabaseURL, "postgres://") && !strings.HasPrefix(c.DatabaseURL, "postgresql://") {
		return errors.New("--database-url must be a postgres:// URL (leave it empty for the embedded SQLite)")
	}
	switch c.LogFormat {
	case "auto", "text", "json":
	default:
		return fmt.Errorf("--log-format %q: must be auto, text or json", c.LogFormat)
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("--log-level %q: must be debug, info, warn or error", c.LogLevel)
	}
	for _, u := range []struct{ flag, url string }{{"--embeddings-url", c.EmbeddingsURL}, {"--answer-url", c.AnswerURL}} {
		if u.url == "" {
			continue
		}
		if p, err := url.Parse(u.url); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return fmt.Errorf("%s %q: must be an http:// or https:// URL", u.flag, u.url)
		}
	}
	c.PublicURL = strings.TrimRight(c.PublicURL, "/")
	if c.BodyReadTimeout < 0 || c.MaxConnections < 0 || c.StreamsPerUser < 0 || c.StreamsPerConv < 0 || c.DBMaxConnections < 0 || c.GCHeadroomMB < 0 || c.TurnWorkers < 0 {
		return errors.New("limits must not be negative (rates may be -1: no limit)")
	}
	if c.DBWarmConnections < -1 {
		return fmt.Errorf("--db-warm-connections %d: must be -1 (the whole pool), 0 (none) or a number of connections", c.DBWarmConnections)
	}
	return nil
}

// publicURLFor derives the public URL from the address actually listened
// on, when none was configured.
func publicURLFor(configured string, addr net.Addr) string {
	if configured != "" {
		return configured
	}
	host, port, _ := net.SplitHostPort(addr.String())
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port)
}
