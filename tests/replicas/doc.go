// Package replicas tests several gateway processes sharing runs through one
// Redis (--store redis://...): a run created on one replica is served by
// another, handles minted on one resolve on the other, concurrent calls of
// one run split across both keep one output sequence and one token per row,
// a run's calls in flight are capped across both (and a replica killed
// mid-call frees its place when the call's lease passes),
// a replica killed mid-run loses nothing, and a run deleted through one
// replica has its calls in flight on another cancelled at once, their loom
// processes killed (with tests/fakeloom as the loom). The two-replica
// scenarios run once on a Redis and once on a Redis Cluster of three
// shards:
//
//	eval "$(scripts/redis.sh start)"   # sets LOOM_GATEWAY_TEST_REDIS and LOOM_GATEWAY_TEST_REDIS_CLUSTER
//	go test ./tests/replicas/
//
// Each variant skips when its variable is not set.
package replicas
