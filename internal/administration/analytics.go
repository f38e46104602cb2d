package administration

import (
	"context"
	"math"
	"time"

	"github.com/parley-bots/parley/internal/model"
)

// Analytics of a bot, computed from its stored messages, users,
// conversations and turn runs (store.Activity) and its trackAnalytics
// counters: getBotAnalytics (one record per UTC day) and Parley's richer
// series by hour or by day.

// Interval is a series' period: an hour or a day (UTC).
type Interval string

const (
	Hourly Interval = "hour"
	Daily  Interval = "day"
)

// Range limits: at most 31 days by hour, 366 by day.
const (
	maxHourlySpan = 31 * 24 * time.Hour
	maxDailySpan  = 366 * 24 * time.Hour
)

// AnalyticsPoint is one period of a series; every period of the range has
// one, zeros included.
type AnalyticsPoint struct {
	Start, End time.Time // [Start, End)
	model.ActivityBucket
	// TurnP50 and TurnP95 are turn-time percentiles (nearest rank); zero
	// without turns.
	TurnP50, TurnP95 time.Duration
	// CustomEvents are the trackAnalytics counters (daily series only:
	// they are kept by day).
	CustomEvents map[string]int64
}

// Analytics returns the bot's series over [from, to], by interval, the
// ends rounded out to whole periods.
func (s *Support) Analytics(ctx context.Context, c *Caller, botID string, from, to time.Time, interval Interval) ([]AnalyticsPoint, error) {
	if err := c.require("getBotAnalytics"); err != nil {
		return nil, err
	}
	var size, max time.Duration
	switch interval {
	case Hourly:
		size, max = time.Hour, maxHourlySpan
	case Daily:
		size, max = 24*time.Hour, maxDailySpan
	default:
		return nil, model.Errorf(model.ErrInvalidQuery, "interval: must be %q or %q", Hourly, Daily)
	}
	if to.Before(from) {
		return nil, model.Errorf(model.ErrInvalidQuery, "endDate: must not be before startDate")
	}
	start := from.UTC().Truncate(size)
	end := to.UTC().Truncate(size).Add(size)
	if end.Sub(start) > max {
		return nil, model.Errorf(model.ErrInvalidQuery, "the range is too long: at most %d days by %s", int(max.Hours()/24), interval)
	}
	if _, err := s.bot(ctx, c, botID); err != nil {
		return nil, err
	}
	buckets, err := s.store.Activity().Buckets(ctx, botID, start, end, size)
	if err != nil {
		return nil, err
	}
	byStart := make(map[int64]model.ActivityBucket, len(buckets))
	for _, b := range buckets {
		byStart[b.Start.UnixMilli()] = b
	}
	var custom map[string]map[string]int64 // day → name → count
	if interval == Daily {
		counts, err := s.store.Analytics().List(ctx, botID, start.Format(time.DateOnly), end.Add(-time.Millisecond).Format(time.DateOnly))
		if err != nil {
			return nil, err
		}
		custom = map[string]map[string]int64{}
		for _, c := range counts {
			if custom[c.Day] == nil {
				custom[c.Day] = map[string]int64{}
			}
			custom[c.Day][c.Name] += c.Count
		}
	}
	var out []AnalyticsPoint
	for t := start; t.Before(end); t = t.Add(size) {
		b := byStart[t.UnixMilli()]
		b.Start = t
		p := AnalyticsPoint{Start: t, End: t.Add(size), ActivityBucket: b,
			TurnP50: percentile(b.TurnDurations, 0.50), TurnP95: percentile(b.TurnDurations, 0.95),
			CustomEvents: custom[t.Format(time.DateOnly)]}
		out = append(out, p)
	}
	return out, nil
}

// percentile is the nearest-rank percentile of sorted durations.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	if i < 0 {
		i = 0
	}
	return sorted[i]
}
