package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/loom-gateway/gateway/internal/ifc"
	"github.com/loom-gateway/gateway/internal/loom"
)

// checkLoomUsage is the first line of check-loom's --help.
const checkLoomUsage = "Usage: gateway check-loom --loom-retrieval-config FILE [flags]\n\n" +
	"Runs the configured loom once per retrieval command, with a harmless argument, as the\n" +
	"gateway runs it (the same argv, environment, timeout and stdout cap), and says for each\n" +
	"whether the gateway can use what it printed and what to fix (docs/loom.md).\n\nFlags:\n"

// stderrTail is how much of a failing command's stderr check-loom shows.
const stderrTail = 2 << 10

// checkLoom is `gateway check-loom`: args are the arguments after the
// subcommand's name. It returns nil when every command passes, a
// *usageError for a flag or configuration mistake (exit 2), and an error
// saying how many commands failed otherwise (exit 1).
func checkLoom(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var (
		configPath, page, person string
		timeout                  time.Duration
		maxStdout                int64
	)
	fs := flag.NewFlagSet("check-loom", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.StringVar(&configPath, "loom-retrieval-config", getenv("CF_HARNESS_LOOM_RETRIEVAL_CONFIG"), "absolute `path` of the loom retrieval host config (or env CF_HARNESS_LOOM_RETRIEVAL_CONFIG)")
	fs.DurationVar(&timeout, "command-timeout", 30*time.Second, "per-command timeout, as the gateway's flag")
	fs.Int64Var(&maxStdout, "max-stdout-bytes", 64<<20, "cap on a command's stdout in `bytes`, as the gateway's flag")
	fs.StringVar(&page, "page", "", "`target` for page inspect and page read (default: the first page discover lists, else \"check-loom\")")
	fs.StringVar(&person, "person", "person:check-loom", "`lookup` for people (an email, a phone, a handle:, person: or group: id)")
	if err := parseSubcommand(fs, args, stderr, checkLoomUsage); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("check-loom: unexpected argument %q", fs.Arg(0))
	}
	if configPath == "" {
		return usagef("check-loom: --loom-retrieval-config is required: the host config whose loom to check")
	}
	cfg, err := loom.LoadConfig(configPath)
	if err != nil {
		return usagef("--loom-retrieval-config %s: %v", configPath, err)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cli := loom.New(loom.Options{
		Timeout:   timeout,
		MaxStdout: maxStdout,
		Contain:   loomContainment(log, os.Executable, loom.Contain),
	})
	hostPath, set := os.LookupEnv("PATH")
	c := &checker{cfg: cfg, cli: cli, env: loom.Env(cfg, hostPath, set), timeout: timeout, maxStdout: maxStdout, w: stdout}
	fmt.Fprintf(stdout, "checking %s (cliPath %s)\n", configPath, cfg.CLIPath)
	failed := 0
	if !c.ceiling() {
		failed++
	}
	for _, tool := range loom.Tools {
		input := checkInput(tool, page, person, c.firstPage)
		if !c.tool(ctx, tool, input) {
			failed++
		}
	}
	if failed > 0 {
		fmt.Fprintf(stdout, "%d of %d checks failed (docs/loom.md says what each command must print)\n", failed, len(loom.Tools)+1)
		return fmt.Errorf("check-loom: %s failed", plural(failed, "check"))
	}
	fmt.Fprintf(stdout, "all %d commands passed\n", len(loom.Tools))
	return nil
}

// checkInput is the harmless input check-loom gives tool.
func checkInput(tool loom.Tool, page, person, firstPage string) string {
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	if page == "" {
		page = firstPage
	}
	if page == "" {
		page = "check-loom"
	}
	switch tool {
	case loom.Search:
		return `{"query":"check-loom","limit":1}`
	case loom.PageDiscover:
		return `{"limit":1}`
	case loom.PageInspect, loom.PageRead:
		return `{"target":` + q(page) + `}`
	case loom.People:
		return `{"query":` + q(person) + `}`
	case loom.Context:
		return `{"read":"where"}`
	}
	return `{}` // calendar list, profile
}

// checker runs the checks of one check-loom.
type checker struct {
	cfg       *loom.Config
	cli       *loom.CLI
	env       []string
	timeout   time.Duration
	maxStdout int64
	w         io.Writer
	firstPage string // the first page discover listed, for inspect and read
}

// report prints one check's line and its fixes; it returns pass.
func (c *checker) report(name string, pass bool, facts []string, fixes ...string) bool {
	verdict := "PASS"
	if !pass {
		verdict = "FAIL"
	}
	fmt.Fprintf(c.w, "%-19s %s  %s\n", name, verdict, strings.Join(facts, ", "))
	for _, f := range fixes {
		fmt.Fprintf(c.w, "    fix: %s\n", f)
	}
	return pass
}

// ceiling checks the read-ceiling record, which every call reads first.
func (c *checker) ceiling() bool {
	if c.cfg.ReadCeilingFile == "" {
		return c.report("read-ceiling", true, []string{"no readCeilingFile configured (runs' own ceilings apply)"})
	}
	if _, err := loom.ReadCeiling(c.cfg); err != nil {
		return c.report("read-ceiling", false, []string{err.Error()},
			"every call answers ceiling_unavailable until "+c.cfg.ReadCeilingFile+" is a JSON object with a non-empty loomReadCeiling array, a non-empty facets array (equal, sorted, to the config's facets when those are set) and a non-empty facetSource string")
	}
	return c.report("read-ceiling", true, []string{"record readable"})
}

// tool runs tool once with input, as the gateway does, and reports.
func (c *checker) tool(ctx context.Context, tool loom.Tool, input string) bool {
	name := string(tool)
	inv, err := loom.BuildArgv(c.cfg, tool, []byte(input))
	argv := inv.Argv
	if err != nil { // the inputs are fixed; a --page or --person may be refused
		return c.report(name, false, []string{"not run: " + err.Error()}, "give --page or --person a value the tool accepts (docs/agents.md)")
	}
	out, err := c.cli.RunTool(ctx, tool, argv, c.env)
	if err != nil {
		return c.runFailed(name, argv, out, err)
	}
	kept := out.Condensed
	defer kept.Release()
	facts := []string{"started", fmt.Sprintf("exit %d", out.ExitCode)}
	if out.ExitCode < 0 {
		facts[1] = "killed by a signal"
	}
	if kept.Refused {
		return c.report(name, false, append(facts, "stdout one JSON value past the gateway's reading bounds"),
			"the gateway answers malformed_payload: keep member names under 64 KiB, numbers under 4 KiB, an envelope value under 1 MiB and open objects under 65,536 members")
	}
	err = loom.Decide(tool, inv.PersonLookup, kept.Payload != nil, out.ExitCode, kept.Facts)
	var refused *loom.HostRefusedError
	switch {
	case errors.Is(err, loom.ErrNotFound):
		return c.report(name, true, append(facts, "no JSON: answered not_found (a valid answer: no one matches "+input+")"))
	case errors.Is(err, loom.ErrContested):
		return c.report(name, true, append(facts, "no JSON: answered contested (a valid answer: several people match)"))
	case errors.Is(err, loom.ErrNotJSON):
		return c.stderrToo(name, argv, append(facts, "stdout not one JSON value"),
			"stdout must hold exactly one JSON value (whitespace around it allowed; no banner, no second document, no log line): write everything else to stderr",
			"argv was: "+strings.Join(argv, " "))
	case errors.As(err, &refused):
		code := "no code"
		if refused.HasHostCode {
			code = "code " + refused.HostCode
		}
		return c.report(name, true, append(facts, "JSON", "ok:false ("+code+"): answered host_refused; the success shape was not checked"))
	case errors.Is(err, loom.ErrSchemaVersion):
		return c.report(name, false, append(facts, "JSON", "schemaVersion is not 1"),
			"search's schemaVersion must be the number 1 or absent (the gateway answers schema_version_mismatch)")
	case err != nil: // *ExitError
		return c.stderrToo(name, argv, append(facts, "JSON"),
			"a success must exit 0 (only profile may exit 1, with hasProfile:false); the gateway answers command_failed",
			"argv was: "+strings.Join(argv, " "))
	}
	facts = append(facts, "JSON")
	if !kept.Shaped {
		return c.report(name, false, append(facts, "shape wrong"), "the gateway answers malformed_payload: "+shapeRule(tool))
	}
	facts = append(facts, "shape ok")
	res := ifc.Measure(ifc.Input{
		OutputID:  "check-loom",
		Command:   tool.Command(),
		Rows:      kept.Rows,
		More:      kept.More,
		RowBytes:  kept.RowBytes,
		Envelope:  kept.Envelope,
		Ceiling:   ifc.NoCeiling,
		Unlabeled: ifc.LabelForUnlabeledRow(nil, c.cfg.UnlabeledRowLabel),
		// Where Condense found the labels: a row withheld is not written.
		LabelSpans: kept.LabelSpans,
	})
	labeled, unlabeled, unreadable, first := 0, 0, 0, -1
	for i, e := range res.Entries {
		switch {
		case !e.Admitted:
			unreadable++
			if first < 0 {
				first = i
			}
		case e.LabelSource == ifc.SourceRow:
			labeled++
		default:
			unlabeled++
		}
	}
	facts = append(facts, plural(len(kept.Rows)+kept.More, "row"),
		fmt.Sprintf("labels: %d read, %d unlabeled, %d unreadable", labeled, unlabeled, unreadable))
	if res.Omitted > 0 {
		facts = append(facts, fmt.Sprintf("%d past the result's budget", res.Omitted))
	}
	if tool == loom.PageDiscover && len(kept.Rows) > 0 {
		var row struct {
			Path string `json:"path"`
		}
		if json.Unmarshal(kept.Rows[0], &row) == nil && row.Path != "" && !strings.HasPrefix(row.Path, "-") {
			c.firstPage = row.Path
		}
	}
	if unreadable > 0 {
		return c.report(name, false, facts, fmt.Sprintf(
			"row %d (counting from 0) carries an ifc the gateway cannot read, so it is always withheld (cfc_label_read_failed): ifc must be an object whose confidentiality is an array of clauses (a string, an object with a string type, or {\"anyOf\":[atoms]}); leave ifc out for an unlabeled row", first))
	}
	return c.report(name, true, facts)
}

// shapeRule says what tool's stdout must be.
func shapeRule(tool loom.Tool) string {
	s := loom.ShapeOf(tool)
	switch {
	case s.List != "":
		return fmt.Sprintf("stdout must be a JSON object whose %q member is an array of rows (envelope members: %s)", s.List, strings.Join(s.Envelope, ", "))
	case s.Array:
		return "stdout must be a JSON array of rows"
	}
	return "stdout must be a JSON object (the one row)"
}

// runFailed reports a command the runner ended or could not start.
func (c *checker) runFailed(name string, argv []string, out loom.Output, err error) bool {
	var se *loom.StartError
	switch {
	case errors.As(err, &se):
		why := "could not start"
		if se.Err != nil {
			why += ": " + se.Err.Error()
		}
		return c.report(name, false, []string{why},
			"cliPath must be the absolute path of an executable this user may run (a script needs a #! line and the execute bit); the gateway answers command_failed")
	case errors.Is(err, loom.ErrTimeout):
		return c.stderrToo(name, argv, []string{"started", "timed out after " + c.timeout.String()},
			"the command must exit within --command-timeout; the gateway killed its process group and answers command_failed")
	case errors.Is(err, loom.ErrStdoutLimit):
		return c.stderrToo(name, argv, []string{"started", fmt.Sprintf("stdout past %d bytes", c.maxStdout)},
			"stdout must stay within --max-stdout-bytes; the gateway killed its process group and answers command_failed")
	}
	return c.report(name, false, []string{err.Error()}, "the gateway answers command_failed")
}

// stderrToo reports a failed command and shows the tail of its stderr,
// which the gateway never reads: it runs argv once more, directly, with
// the same environment and timeout.
func (c *checker) stderrToo(name string, argv, facts []string, fixes ...string) bool {
	c.report(name, false, facts, fixes...)
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = c.env
	cmd.WaitDelay = time.Second // a child left holding stderr open
	var errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &errb
	_ = cmd.Run()
	tail := errb.Bytes()
	if len(tail) > stderrTail {
		tail = tail[len(tail)-stderrTail:]
	}
	if s := strings.TrimSpace(string(tail)); s != "" {
		for _, line := range strings.Split(s, "\n") {
			fmt.Fprintf(c.w, "    stderr: %s\n", line)
		}
	}
	return false
}

// plural is "1 row", "2 rows".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// parseSubcommand parses a subcommand's flags (fs, named as the
// subcommand): --help prints usage and the flags to stderr and answers
// errHelp; a bad flag answers a usage error that names the subcommand and
// its --help.
func parseSubcommand(fs *flag.FlagSet, args []string, stderr io.Writer, usage string) error {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(stderr)
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
		return errHelp
	}
	return usagef("%s: %v (gateway %s --help lists the flags)", fs.Name(), err, fs.Name())
}
