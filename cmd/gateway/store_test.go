package main

import (
	"strings"
	"testing"
	"time"
)

func TestRedisOptions(t *testing.T) {
	tests := []struct {
		url              string
		addr, user, pass string
		db               int
		tls, cluster     bool
		wantErr          bool
	}{
		{url: "redis://127.0.0.1:6379/0", addr: "127.0.0.1:6379"},
		{url: "redis://localhost/3", addr: "localhost:6379", db: 3},
		{url: "rediss://gw:s3cret@redis.internal:6380/2", addr: "redis.internal:6380", user: "gw", pass: "s3cret", db: 2, tls: true},
		{url: "redis://:s3cret@10.0.0.1:6379/0?dial_timeout=1s", addr: "10.0.0.1:6379", pass: "s3cret"},
		{url: "redis://:s3cret@node1:7000?addr=node2:7000&addr=node3:7000", addr: "node1:7000", pass: "s3cret", cluster: true},
		{url: "memcached://x", wantErr: true},
		{url: "redis://:s3cret@host:port:6379/x", wantErr: true},
		{url: "redis://host:6379/0?bogus=1", wantErr: true},
		{url: "Redis", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			ro, co, err := redisOptions(tt.url)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("redisOptions(%q) = nil error, want one", tt.url)
				}
				if strings.Contains(err.Error(), "s3cret") {
					t.Errorf("redisOptions(%q) error %q repeats the password", tt.url, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("redisOptions(%q) = %v", tt.url, err)
			}
			if tt.cluster {
				if co == nil || ro != nil {
					t.Fatalf("redisOptions(%q): cluster %v, single %v, want a cluster", tt.url, co != nil, ro != nil)
				}
				if len(co.Addrs) != 3 || co.Addrs[0] != tt.addr || co.Password != tt.pass {
					t.Errorf("redisOptions(%q) = addrs %q, password %q", tt.url, co.Addrs, co.Password)
				}
				return
			}
			if ro == nil || co != nil {
				t.Fatalf("redisOptions(%q): single %v, cluster %v, want a single server", tt.url, ro != nil, co != nil)
			}
			if ro.Addr != tt.addr || ro.Username != tt.user || ro.Password != tt.pass || ro.DB != tt.db || (ro.TLSConfig != nil) != tt.tls {
				t.Errorf("redisOptions(%q) = addr %q user %q password %q db %d tls %v", tt.url, ro.Addr, ro.Username, ro.Password, ro.DB, ro.TLSConfig != nil)
			}
		})
	}
	if ro, _, _ := redisOptions("redis://h:1/0?dial_timeout=1s"); ro.DialTimeout != time.Second {
		t.Errorf("dial_timeout=1s gave DialTimeout %v", ro.DialTimeout)
	}
}

// TestRedisDefaults: timeouts and retries the URL does not name take the
// gateway's short defaults; those it names keep the URL's value.
func TestRedisDefaults(t *testing.T) {
	type got struct {
		dial, read, write, pool time.Duration
		retries                 int
	}
	short := got{time.Second, time.Second, time.Second, time.Second, 1}
	tests := []struct {
		url  string
		want got
	}{
		{"redis://127.0.0.1:6379/0", short},
		{"redis://127.0.0.1:6379/0?read_timeout=5s&max_retries=4", got{time.Second, 5 * time.Second, time.Second, time.Second, 4}},
		{"redis://h:6379/0?dial_timeout=3s&write_timeout=2s&pool_timeout=7s", got{3 * time.Second, time.Second, 2 * time.Second, 7 * time.Second, 1}},
		{"redis://node1:7000?addr=node2:7000", short},
		{"redis://node1:7000?addr=node2:7000&read_timeout=4s&max_retries=0", got{time.Second, 4 * time.Second, time.Second, time.Second, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			ro, co, err := redisOptions(tt.url)
			if err != nil {
				t.Fatal(err)
			}
			redisDefaults(tt.url, ro, co)
			var g got
			if ro != nil {
				g = got{ro.DialTimeout, ro.ReadTimeout, ro.WriteTimeout, ro.PoolTimeout, ro.MaxRetries}
			} else {
				g = got{co.DialTimeout, co.ReadTimeout, co.WriteTimeout, co.PoolTimeout, co.MaxRetries}
			}
			if g != tt.want {
				t.Errorf("got %+v, want %+v", g, tt.want)
			}
		})
	}
}
