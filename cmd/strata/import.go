package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/strata-db/strata/revision"
	"github.com/strata-db/strata/snapshots"
)

type importOptions struct {
	write writeFlags
	json  bool
}

func newImportCommand(g *globalOptions) *cobra.Command {
	o := &importOptions{}
	cmd := &cobra.Command{
		Use:   "import DB RESOURCE FILE|-",
		Short: "Create or replace a resource with a JSON document from a file or stdin",
		Long: `Create or replace a whole resource with the JSON document in FILE ('-' reads stdin), as one new revision.
The JSON must be strict: valid UTF-8, no duplicate keys; numbers keep their exact text. Only what changed is
stored: the output says how many new nodes and bytes the revision added.`,
		Example: `  strata import shop catalog catalog.json -m "catalog from the supplier"
  curl -s https://example.com/config.json | strata import shop config - --branch try-config`,
		Args: args(3, 3),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			return importResource(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), g, o, args[0], args[1], args[2])
		}),
	}
	o.write.register(cmd, "the branch to write on")
	cmd.Flags().BoolVar(&o.json, "json", false, "print JSON")
	return cmd
}

func importResource(ctx context.Context, stdin io.Reader, w, stderr io.Writer, g *globalOptions, o *importOptions, dbName, resource, file string) error {
	// The library's Put takes the document as bytes, so the input is read whole; on a terminal a progress bar
	// follows the reading of an input of known size. (Streaming it into the store as it is read would need a
	// commit that places a tree made by Forest.Import, whose nodes are written outside the commit's transaction
	// and so could be collected by a concurrent gc before the commit refers to them.)
	var data []byte
	var err error
	from := file
	if file == "-" {
		from = "stdin"
		if f, ok := stdin.(*os.File); ok && isTerminal(f) {
			fmt.Fprintln(stderr, "strata: reading the JSON document from stdin; end it with Ctrl-D")
		}
		data, err = readInput(stdin, from, stderr, g)
	} else {
		var f *os.File
		if f, err = os.Open(file); err == nil {
			data, err = readInput(f, from, stderr, g)
			f.Close()
		}
	}
	if errors.Is(err, fs.ErrNotExist) {
		return &cliError{code: exitNotFound, err: fmt.Errorf("reading %s: %w", from, err)}
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", from, err)
	}
	wo := g.writeOptions(&o.write, "import")
	if wo.Message == "" {
		wo.Message = fmt.Sprintf("import %s from %s", resource, from)
	}
	return g.withDB(ctx, dbName, func(db *snapshots.DB) error {
		start := time.Now()
		res, err := db.Put(ctx, resource, data, wo)
		if err != nil {
			// Put is an "add" patch underneath; say nothing of it.
			var pe *revision.PatchError
			if errors.As(err, &pe) {
				err = &reworded{pe.Err.Error(), err}
			}
			return fmt.Errorf("importing %s into %s: %w", from, resource, err)
		}
		took := time.Since(start)
		if o.json {
			return writeJSON(w, struct {
				writeResult
				Resource  string  `json:"resource"`
				Size      int     `json:"size"`
				ElapsedMS float64 `json:"elapsed_ms"`
			}{writeResult{res, wo.Author, wo.Tool}, resource, len(data), ms(took)})
		}
		what := fmt.Sprintf("imported %s (%s of JSON; %d new node%s, %s stored) %s", resource, byteSize(int64(len(data))),
			res.NewNodes, plural(res.NewNodes), byteSize(res.NewBytes), durationText(took))
		return printWrite(w, res, what)
	})
}

// readInput reads the whole input. When stderr is a terminal and the input is a regular file (a file named on the
// command line, or stdin redirected from one, but not a pipe), a progress bar on stderr shows the bytes read; it is
// cleared when the reading ends.
func readInput(r io.Reader, name string, stderr io.Writer, g *globalOptions) ([]byte, error) {
	size := int64(-1)
	if f, ok := r.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			size = fi.Size()
		}
	}
	if size <= 0 || !g.env.terminal(stderr) {
		return io.ReadAll(r)
	}
	bar := progressbar.NewOptions64(size,
		progressbar.OptionSetWriter(stderr),
		progressbar.OptionSetDescription("reading "+name),
		progressbar.OptionShowBytes(true),
		progressbar.OptionSetWidth(30),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSetRenderBlankState(true),
	)
	buf := bytes.NewBuffer(make([]byte, 0, size+bytes.MinRead))
	// Reads of at most 1 MiB, so that the bar moves while a big file is read (one read could take it all).
	_, err := buf.ReadFrom(io.TeeReader(&chunkReader{r: r, max: 1 << 20}, bar))
	if err != nil {
		bar.Clear()
		return nil, err
	}
	bar.Finish()
	return buf.Bytes(), nil
}

// chunkReader reads at most max bytes at a time.
type chunkReader struct {
	r   io.Reader
	max int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(p) > c.max {
		p = p[:c.max]
	}
	return c.r.Read(p)
}
