package httpx

import (
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/parley-bots/parley/internal/model"
)

// KeyedLimiter is a token bucket per key (golang.org/x/time/rate): a key
// may make Rate requests per second on average, Burst at once. A nil
// KeyedLimiter allows everything. Buckets that filled up again are
// forgotten, so the memory follows the keys active in the last minute.
type KeyedLimiter struct {
	limit rate.Limit
	burst int
	what  string // "user", "bot": named in the error

	mu      sync.Mutex
	buckets map[string]*rate.Limiter
	swept   time.Time
}

// NewKeyedLimiter returns a limiter of perSecond requests per key with the
// given burst (at least 1); perSecond <= 0 means no limit (nil).
func NewKeyedLimiter(what string, perSecond float64, burst int) *KeyedLimiter {
	if perSecond <= 0 {
		return nil
	}
	if burst < 1 {
		burst = max(1, int(math.Ceil(perSecond)))
	}
	return &KeyedLimiter{limit: rate.Limit(perSecond), burst: burst, what: what,
		buckets: map[string]*rate.Limiter{}, swept: time.Now()}
}

// Allow takes one token of key's bucket, or returns a RateLimited error
// (429, with Retry-After: the seconds until a token is back).
func (l *KeyedLimiter) Allow(key string) error {
	if l == nil {
		return nil
	}
	now := time.Now()
	l.mu.Lock()
	if now.Sub(l.swept) > time.Minute {
		for k, b := range l.buckets {
			if b.TokensAt(now) >= float64(l.burst) {
				delete(l.buckets, k)
			}
		}
		l.swept = now
	}
	b := l.buckets[key]
	if b == nil {
		b = rate.NewLimiter(l.limit, l.burst)
		l.buckets[key] = b
	}
	l.mu.Unlock()
	if b.AllowN(now, 1) {
		return nil
	}
	wait := time.Duration(float64(time.Second) * (1 - b.TokensAt(now)) / float64(l.limit))
	secs := max(1, int(math.Ceil(wait.Seconds())))
	return &model.Error{Type: model.ErrRateLimited,
		Message:  "too many requests for this " + l.what + "; retry later",
		Metadata: map[string]any{"retryAfter": secs}}
}

// Limits are the per-user and per-bot request limits of an API that bots'
// users call (Chat, Webchat, the Runtime API). Nil or zero Limits allow
// everything.
type Limits struct {
	User *KeyedLimiter // keyed by bot id and user id
	Bot  *KeyedLimiter // keyed by bot id
}

// Default limits (README): per user 100 requests/s (burst 200), per bot
// 20,000 requests/s (burst 40,000), well above the 2,000 messages/s of
// the load benchmark.
const (
	DefaultRatePerUser = 100
	DefaultRatePerBot  = 20000
)

// NewLimits returns per-user and per-bot limits in requests per second
// (bursts of twice that); 0 disables one.
func NewLimits(perUser, perBot float64) *Limits {
	return &Limits{User: NewKeyedLimiter("user", perUser, int(2*perUser)), Bot: NewKeyedLimiter("bot", perBot, int(2*perBot))}
}

// AllowBot counts a request to a bot's API.
func (l *Limits) AllowBot(botID string) error {
	if l == nil {
		return nil
	}
	return l.Bot.Allow(botID)
}

// AllowUser counts a request of an authenticated user of a bot.
func (l *Limits) AllowUser(botID, userID string) error {
	if l == nil {
		return nil
	}
	return l.User.Allow(botID + "\x00" + userID)
}
