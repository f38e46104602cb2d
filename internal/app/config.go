// Package app assembles a Parley server from its configuration: store,
// service, realtime hub, bot runtime and HTTP routes.
package app

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"strings"
)

// Config is everything `parley serve` can be told, by flag or environment.
type Config struct {
	Addr        string
	DataDir     string
	DatabaseURL string
	PublicURL   string
	LogFormat   string // auto, text or json
	LogLevel    string // debug, info, warn, error
	AdminToken  string // only from the environment: flags are visible in ps
}

// LoadConfig parses serve's flags; each flag falls back to its environment
// variable, then to its default.
func LoadConfig(args []string, getenv func(string) string, stderr io.Writer) (Config, error) {
	var c Config
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
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	c.AdminToken = getenv("PARLEY_ADMIN_TOKEN")
	return c, c.validate()
}

func (c *Config) validate() error {
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		return fmt.Errorf("--addr %q: %w", c.Addr, err)
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
	c.PublicURL = strings.TrimRight(c.PublicURL, "/")
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
