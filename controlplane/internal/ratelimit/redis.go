package ratelimit

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is a Limiter shared by every control-plane replica: one counter per key
// and window in Redis, incremented and given its expiry in one round trip.
type Redis struct {
	client *redis.Client
	// Now is the clock; tests may replace it.
	Now func() time.Time
}

// NewRedis connects to the Redis at url (redis://…).
func NewRedis(ctx context.Context, url string) (*Redis, error) {
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("cannot parse SHORTLINK_REDIS_URL: %w", err)
	}
	c := redis.NewClient(opts)
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		return nil, fmt.Errorf("cannot reach Redis: %w", err)
	}
	return &Redis{client: c, Now: time.Now}, nil
}

// Close closes the connection.
func (r *Redis) Close() error { return r.client.Close() }

// Allow implements Limiter.
func (r *Redis) Allow(ctx context.Context, key string, limit int) (Result, error) {
	w := r.Now().Unix() / int64(Window/time.Second)
	k := "shortlink:rl:" + key + ":" + strconv.FormatInt(w, 10)
	pipe := r.client.TxPipeline()
	incr := pipe.Incr(ctx, k)
	pipe.Expire(ctx, k, 2*Window)
	if _, err := pipe.Exec(ctx); err != nil {
		return Result{}, fmt.Errorf("rate limit: %w", err)
	}
	return resultOf(int(incr.Val()), limit, w), nil
}
