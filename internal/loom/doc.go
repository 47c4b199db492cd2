// Package loom is the host side of the eight read-only Loom retrieval tools:
// the operator's configuration, the argument builder, the process runner and
// the reading of what a command printed. It knows nothing of labels beyond
// reading the read-ceiling record; measuring rows is package ifc's job.
//
// A call goes through these steps, each its own function so each can be
// tested alone; this is the path gateway.Service.Call takes:
//
//	cfg, err := LoadConfig(path)             // once, at startup
//	cli := New(Options{...})                 // once, at startup
//	path, set := os.LookupEnv("PATH")        // once, at startup
//
//	ceiling, err := ReadCeiling(cfg)         // every call, before anything else
//	inv, err := BuildArgv(cfg, tool, input)  // pure, the one parse; every refusal happens here
//	out, err := cli.RunTool(ctx, tool, inv.Argv, Env(cfg, path, set))
//	kept := &out.Condensed                   // Condense read stdout as it arrived
//	defer kept.Release()                     // its memory back to Condense when the call ends
//	err = Outcome(inv, out.ExitCode, kept, ended) // the one verdict: Refused, Decide, ended, Shaped
//	// then the core measures kept.Rows and kept.Envelope with
//	// ifc.MeasureContext, More: kept.More, RowBytes: kept.RowBytes,
//	// Labels: kept.Labels, LabelSpans: kept.LabelSpans (ctx carried the
//	// ceiling and query label the measurement is given: WithMeasuring)
//
// Condense reads stdout once, as it arrives, through a window, and
// returns what it learned as Go values (Condensed): the facts Decide reads
// (ok, code, hasProfile, schemaVersion), whether the payload has its
// tool's shape (ShapeOf), the envelope, and the first ifc.MaxMeasuredRows
// rows with their long strings shortened (of a row past 1 MiB only what
// the result writer still reads) and their lengths; later rows are checked
// and counted in More. Nothing reads stdout again: Decide decides over
// the facts and the exit code, and the measurement reads the rows. Condense
// holds no name over 64 KiB or number over 4 KiB, no more than 65,536
// members of the objects open at once and no envelope value over 1 MiB: a
// payload past those is Refused. What it keeps is built in pooled memory,
// which the caller gives back with Release once it is done with the rows
// (ifc.Measure's result holds copies), so a call neither copies it out nor
// leaves it to the collector. The window reads on whenever less than
// 16 KiB of it is unread, so that a row is most often wholly in it and
// checked in one jsjson.Scanner pass, which also tells where the row's
// label is (Condensed.LabelSpans): the measurement withholds a row by its
// label without writing it. Nothing in the package keeps stdout whole.
//
// The reading of stdout whole (loomref.Output, decode, Interpret, Split) is
// package loomref's: the reference the equivalence tests and fuzz targets hold
// Condense, Decide and the measurement to. No production package imports
// it.
//
// What the package guarantees:
//
//   - Argv is built only from typed, validated input. Every free-text value
//     is 1 to 500 UTF-16 units, holds no character below U+0020 and does not
//     start with '-', so nothing the agent writes reads as a flag; the flags
//     are a fixed set the builder writes itself. Routing flags and
//     --read-ceiling-file are never passed. The people lookup must look
//     like a lookup, so loom's maintenance and group verbs cannot be named.
//   - The executable is the configured absolute path, run directly: no
//     shell, no PATH lookup, argv[0] as given.
//   - The environment is exactly what Env returns: PATH and the transport's
//     routing variables. exec.Cmd.Env is never nil, so nothing of the
//     gateway's own environment leaks into the command.
//   - stdin is the null device: nothing is written to the command. stderr
//     is a pipe read as it comes, of which only the last MaxStderrTail
//     bytes are kept (Output.Stderr), for the host's record of a failed
//     call (StderrText); no error of this package carries it.
//   - The command runs in a process group of its own, and with
//     Options.Contain in a PID namespace of its own under an init (package
//     nsinit) that leads the group. A timeout, a stdout over the cap, or
//     the caller's cancellation kills the whole group (the init, and so the
//     namespace, with it); after the command exits, whatever remains of its
//     namespace or group is killed too. Without a namespace a grandchild
//     that left the group and holds stdout open delays RunTool by at most
//     Options.WaitDelay. The command's argv, environment, descriptors and
//     exit code are the same in a namespace or not.
//   - At most Options.MaxConcurrent commands are alive at once; a call
//     waits up to Options.QueueWait for a slot, then fails with ErrBusy.
//     With Options.Limiter the caller takes the slot (Limiter.Acquire)
//     and keeps it past RunTool while it reads the output, so the Limiter
//     bounds the calls that run loom or read its output.
//   - Condense keeps a bounded number of rows (the rest are counted).
//   - No error message carries host text: not stderr, not a path, not an
//     OS error string, not argv, not payload text, not a rejected input
//     value. Causes kept for logs (StartError.Err, ConfigError.Err) are
//     reachable only through Unwrap. InputError may name the field and an
//     enum's choices; HostRefusedError carries loom's own code, which the
//     reference passes on as hostCode.
//
// What it refuses to do: run anything when the input, the configuration or
// the read-ceiling record is wrong; read a named record that cannot be read
// as "no ceiling"; decode rows into Go maps (rows stay raw JSON, in loom's
// key order, for ifc to measure).
//
// Errors are sentinels for conditions (ErrBusy, ErrCancelled, ErrTimeout,
// ErrStdoutLimit, ErrStart, ErrNotJSON, ErrNotFound, ErrContested,
// ErrSchemaVersion, ErrMalformedPayload) and types for data (*InputError,
// *ConfigError, *CeilingUnavailableError, *HostRefusedError, *ExitError,
// *StartError). Everything that is command_failed matches ErrCommandFailed
// with errors.Is.
//
// The package is for Unix hosts (process groups, SIGKILL).
package loom
