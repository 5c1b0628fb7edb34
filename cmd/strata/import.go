package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/strata-db/strata/formats"
	"github.com/strata-db/strata/gate"
	"github.com/strata-db/strata/snapshots"
)

// The formats import and export take (--format): json, the default; jsonl, one value per line (an array resource);
// csv, a header row then records (an array of flat objects). The format is never guessed from a file's name.
var formatNames = []string{"json", "jsonl", "csv"}

// formatText is how output names a format.
var formatText = map[string]string{"json": "JSON", "jsonl": "JSON Lines", "csv": "CSV"}

func checkFormat(f string) error {
	if !slices.Contains(formatNames, f) {
		return usageErrorf("--format must be json, jsonl or csv, not %q", f)
	}
	return nil
}

type importOptions struct {
	write    writeFlags
	json     bool
	format   string
	csvTypes []string
}

func newImportCommand(g *globalOptions) *cobra.Command {
	o := &importOptions{}
	cmd := &cobra.Command{
		Use:   "import DB RESOURCE FILE|-",
		Short: "Create or replace a resource with a JSON document (or JSON Lines, or CSV) from a file or stdin",
		Long: `Create or replace a whole resource with the document in FILE ('-' reads stdin), as one new revision. The
input is stored as it is read, so memory stays small whatever its size; the revision is made only once all of it is
stored, so a failed or interrupted import changes nothing.

--format says what the input is (it is never guessed from the file's name):
  json   one JSON document (the default)
  jsonl  JSON Lines: one JSON value per line, stored as an array
  csv    a header row naming the columns, then one record per line, stored as an array of objects; every value
         is a string unless --csv-types gives its column a type: number (kept as written; an empty field is
         null), boolean (true or false) or json (the field is JSON text)

The JSON must be strict: valid UTF-8, no duplicate keys; numbers keep their exact text. An error names its line,
column and byte offset. Only what changed is stored: the output says how many new nodes and bytes the revision
added.`,
		Example: `  strata import shop catalog catalog.json -m "catalog from the supplier"
  curl -s https://example.com/config.json | strata import shop config - --branch try-config
  strata import shop events events.jsonl --format jsonl
  strata import shop prices prices.csv --format csv --csv-types price=number,active=boolean`,
		Args: args(3, 3),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(o.format); err != nil {
				return err
			}
			if len(o.csvTypes) > 0 && o.format != "csv" {
				return usageErrorf("--csv-types is for --format csv")
			}
			return importResource(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), g, o, args[0], args[1], args[2])
		}),
	}
	o.write.register(cmd, "the branch to write on")
	cmd.Flags().BoolVar(&o.json, "json", false, "print JSON")
	cmd.Flags().StringVar(&o.format, "format", "json", "what the input is: json, jsonl (JSON Lines) or csv")
	cmd.Flags().StringSliceVar(&o.csvTypes, "csv-types", nil, "types of CSV columns, as COLUMN=TYPE,... with TYPE number, boolean, json or string (the default)")
	return cmd
}

func importResource(ctx context.Context, stdin io.Reader, w, stderr io.Writer, g *globalOptions, o *importOptions, dbName, resource, file string) error {
	var types map[string]formats.ColumnType
	if o.format == "csv" {
		var err error
		if types, err = formats.ParseColumnTypes(o.csvTypes); err != nil {
			return usageErrorf("--csv-types: %v", strings.TrimPrefix(err.Error(), formats.ErrInvalidCSV.Error()+": "))
		}
	}
	from := file
	var in io.Reader
	if file == "-" {
		from = "stdin"
		in = stdin
	} else {
		f, err := os.Open(file)
		if errors.Is(err, fs.ErrNotExist) {
			return &cliError{code: exitNotFound, err: fmt.Errorf("reading %s: %w", from, err)}
		}
		if err != nil {
			return fmt.Errorf("reading %s: %w", from, err)
		}
		defer f.Close()
		in = f
	}
	wo := g.writeOptions(&o.write, "import")
	if wo.Message == "" {
		wo.Message = fmt.Sprintf("import %s from %s", resource, from)
	}
	return g.asOperatorIn(ctx, dbName, "import", []string{dbName, resource, file}, func(ctx context.Context, db *gate.View) error {
		if f, ok := in.(*os.File); ok && file == "-" && isTerminal(f) {
			fmt.Fprintf(stderr, "strata: reading %s from stdin; end it with Ctrl-D\n", formatText[o.format])
		}
		cr := &countingReader{r: in}
		bar := progressFor(in, from, stderr, g)
		var r io.Reader = cr
		if bar != nil {
			// Reads of at most 1 MiB, so that the bar moves while a big file is read (one read could take it all).
			r = io.TeeReader(&chunkReader{r: cr, max: 1 << 20}, bar)
		}
		if o.format == "csv" {
			r = formats.NewCSVReader(r, types)
		}
		start := time.Now()
		ch := g.change(gate.OpPut, &o.write, "import")
		ch.Message = wo.Message
		res, err := db.Import(ctx, resource, r, snapshots.ImportOptions{Lines: o.format != "json"}, ch)
		if bar != nil {
			if err != nil {
				bar.Clear()
			} else {
				bar.Finish()
			}
		}
		if err != nil {
			err = fmt.Errorf("importing %s into %s: %w", from, resource, err)
			if errors.Is(err, formats.ErrInvalidCSV) {
				err = &cliError{code: exitUsage, err: err}
			}
			return err
		}
		took := time.Since(start)
		if o.json {
			return writeJSON(w, struct {
				writeResult
				Resource  string  `json:"resource"`
				Format    string  `json:"format"`
				Size      int64   `json:"size"`
				ElapsedMS float64 `json:"elapsed_ms"`
			}{writeResult{res, wo.Author, wo.Tool}, resource, o.format, cr.n, ms(took)})
		}
		what := fmt.Sprintf("imported %s (%s of %s; %d new node%s, %s stored) %s", resource, byteSize(cr.n), formatText[o.format],
			res.NewNodes, plural(res.NewNodes), byteSize(res.NewBytes), durationText(took))
		return printWrite(w, res, what)
	})
}

// progressFor returns a progress bar on stderr for reading r, when stderr is a terminal and r is a regular file (a
// file named on the command line, or stdin redirected from one, but not a pipe: its size is unknown); else nil.
// It shows the bytes read, which is how far the import is: it stores the input as it reads it.
func progressFor(r io.Reader, name string, stderr io.Writer, g *globalOptions) *progressbar.ProgressBar {
	f, ok := r.(*os.File)
	if !ok || !g.env.terminal(stderr) {
		return nil
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() <= 0 {
		return nil
	}
	return progressbar.NewOptions64(fi.Size(),
		progressbar.OptionSetWriter(stderr),
		progressbar.OptionSetDescription("reading "+name),
		progressbar.OptionShowBytes(true),
		progressbar.OptionSetWidth(30),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSetRenderBlankState(true),
	)
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
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
