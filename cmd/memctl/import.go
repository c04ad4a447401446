package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"
	"github.com/rs/zerolog"
	"github.com/schollz/progressbar/v3"

	"github.com/agentmem/agentmem/internal/importer"
	"github.com/agentmem/agentmem/internal/session"
)

// importView is what memctl import prints.
type importView struct {
	File string `json:"file"`
	importer.Report
}

func importCommand(out io.Writer) *ffcli.Command {
	c := &common{}
	cfg := importer.Config{}
	var quiet, strict bool
	return newCommand("import", "[--tenant T] [--user U] [--dry-run] [--end-sessions] FILE|-",
		"import conversation histories from a JSON Lines file (one turn per line), as normal turns", c, out,
		func(fs *flag.FlagSet) {
			fs.StringVar(&cfg.User, "user", "", "user of lines that name none (a new session's first line needs one)")
			fs.BoolVar(&cfg.DryRun, "dry-run", false, "check every line, publish nothing")
			fs.BoolVar(&cfg.EndSessions, "end-sessions", false, "end each session after its last line (facts are extracted now, not after the idle time)")
			fs.IntVar(&cfg.Window, "window", importer.DefaultWindow, "publishes awaiting their acknowledgement at most")
			fs.DurationVar(&cfg.Timeout, "timeout", importer.DefaultTimeout, "how long to wait for one acknowledgement")
			fs.IntVar(&cfg.MaxContentBytes, "max-content-bytes", importer.DefaultMaxContentBytes, "reject content larger than this, as ingest would (-1: no check)")
			fs.IntVar(&cfg.MaxErrors, "max-errors", importer.DefaultMaxErrors, "bad lines listed in the report (all are counted)")
			fs.BoolVar(&quiet, "quiet", false, "no progress bar")
			fs.BoolVar(&strict, "strict", false, "exit with an error when a line was skipped")
		},
		func(ctx context.Context, args []string) error {
			if len(args) != 1 {
				return errors.New("give one FILE (- for standard input)")
			}
			path := args[0]
			in, total, err := openInput(path)
			if err != nil {
				return err
			}
			defer in.Close()
			cfg.Tenant = c.tenant
			var bar *progressbar.ProgressBar
			if !quiet && !c.json {
				bar = progressbar.NewOptions64(total, progressbar.OptionSetWriter(os.Stderr),
					progressbar.OptionSetDescription("importing "+path), progressbar.OptionShowCount(),
					progressbar.OptionShowIts(), progressbar.OptionSetItsString("lines"),
					progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionSetWidth(30))
				cfg.Progress = func(p importer.Progress) { _ = bar.Set(p.Done) }
			}
			var im *importer.Importer
			if cfg.DryRun {
				im, err = importer.New(cfg, nil, nil, zerolog.Nop())
			} else {
				js, nc, cerr := c.jetstream()
				if cerr != nil {
					return cerr
				}
				defer nc.Close()
				// Reading the sessions takes JetStream (admin credentials): an agent's
				// credentials import without it.
				var store *session.Store
				serr := c.optional(ctx, func(ctx context.Context) (err error) {
					store, err = session.NewStore(ctx, js, c.topo.Events())
					return err
				})
				if serr != nil {
					fmt.Fprintf(os.Stderr, "memctl: cannot read the session store (%v): turns already held are published again and ignored downstream\n", serr)
					store = nil
				}
				im, err = importer.New(cfg, nc, store, zerolog.Nop())
			}
			if err != nil {
				return err
			}
			rep, err := im.Import(ctx, in)
			if bar != nil {
				_ = bar.Finish()
				fmt.Fprintln(os.Stderr)
			}
			perr := c.print(importView{File: path, Report: rep}, func(w io.Writer) { printImport(w, path, rep) })
			switch {
			case err != nil:
				return err
			case perr != nil:
				return perr
			case strict && rep.Skipped > 0:
				return fmt.Errorf("%d lines skipped (--strict)", rep.Skipped)
			}
			return nil
		})
}

// openInput opens FILE, or standard input for "-", and counts its lines when it is a regular file
// (-1 otherwise: the progress bar then shows a count and a rate without an end).
func openInput(path string) (io.ReadCloser, int64, error) {
	if path == "-" {
		return io.NopCloser(os.Stdin), -1, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return f, -1, nil
	}
	n, err := countLines(f)
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("reading %s: %w", path, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, n, nil
}

// countLines counts the lines of r, a last line without a line ending included.
func countLines(r io.Reader) (int64, error) {
	buf := make([]byte, 1<<20)
	var n int64
	last := byte('\n')
	for {
		k, err := r.Read(buf)
		if k > 0 {
			n += int64(bytes.Count(buf[:k], []byte{'\n'}))
			last = buf[k-1]
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, err
		}
	}
	if last != '\n' {
		n++
	}
	return n, nil
}

func printImport(w io.Writer, path string, r importer.Report) {
	took := r.Took.Round(time.Millisecond)
	if r.DryRun {
		fmt.Fprintf(w, "dry run of %s: %s in %s of %s, %s, %d blank; nothing was published\n",
			path, plural(r.Valid, "valid turn"), plural(r.Sessions, "session"), plural(len(r.Tenants), "tenant"), plural(r.Skipped, "bad line"), r.Blank)
	} else {
		fmt.Fprintf(w, "imported %s from %s in %s (%.0f turns/s): %s of %s\n",
			plural(r.Imported, "turn"), path, took, r.Rate, plural(r.Sessions, "session"), plural(len(r.Tenants), "tenant"))
		fmt.Fprintf(w, "imported %d | duplicates %d (held before, not added) | skipped %d (bad lines) | failed %d | blank %d",
			r.Imported, r.Duplicates, r.Skipped, r.Failed, r.Blank)
		if r.Ended > 0 {
			fmt.Fprintf(w, " | sessions ended %d", r.Ended)
		}
		fmt.Fprintln(w)
	}
	for _, e := range r.Errors {
		fmt.Fprintf(w, "  line %d: %s\n", e.Line, e.Error)
	}
	if more := r.Skipped - len(r.Errors); more > 0 {
		fmt.Fprintf(w, "  … and %d more bad lines (--max-errors)\n", more)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
}

// plural is "1 turn" or "2 turns".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
