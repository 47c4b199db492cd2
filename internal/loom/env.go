package loom

// DefaultPath is the PATH a command gets when the host process has none.
const DefaultPath = "/usr/local/bin:/opt/homebrew/bin:/usr/bin:/bin:/usr/sbin:/sbin"

// Env returns the whole environment of a loom command (SEMANTICS (b)): PATH,
// then the routing variables of cfg's transport, nothing else. hostPath and
// hostPathSet are the gateway's own PATH as os.LookupEnv reports it: unset
// gives DefaultPath, set but empty passes the empty value. The result is
// never nil, so it can go to exec.Cmd.Env without inheriting the gateway's
// environment.
//
// Broker: LOOM_PAGE_RPC_QUEUE and LOOM_SEARCH_BROKER_QUEUE, both the queue
// path, for every command. Direct: LOOM_INSTANCE_DIR and LOOM_DISPATCH_ID
// (the run id). The actor is not passed.
func Env(cfg *Config, hostPath string, hostPathSet bool) []string {
	if !hostPathSet {
		hostPath = DefaultPath
	}
	env := make([]string, 1, 3)
	env[0] = "PATH=" + hostPath
	switch cfg.Transport.Kind {
	case TransportBroker:
		env = append(env,
			"LOOM_PAGE_RPC_QUEUE="+cfg.Transport.QueuePath,
			"LOOM_SEARCH_BROKER_QUEUE="+cfg.Transport.QueuePath)
	case TransportDirect:
		env = append(env,
			"LOOM_INSTANCE_DIR="+cfg.Transport.InstanceDir,
			"LOOM_DISPATCH_ID="+cfg.Transport.RunID)
	}
	return env
}

// WithTraceparent returns env with TRACEPARENT=traceparent added, the W3C
// trace context of the call's loom span, so a loom that traces joins the
// gateway's trace; env itself is not changed. An empty traceparent
// (tracing off) returns env. It is the only variable a command gets beyond
// Env's.
func WithTraceparent(env []string, traceparent string) []string {
	if traceparent == "" {
		return env
	}
	out := make([]string, len(env), len(env)+1)
	copy(out, env)
	return append(out, "TRACEPARENT="+traceparent)
}
