package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

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
	// The library's Put takes the document as bytes, so the input is read whole. (A streaming put, with a
	// progress bar on a terminal, comes with Forest.Import behind the database.)
	var data []byte
	var err error
	from := file
	if file == "-" {
		from = "stdin"
		if f, ok := stdin.(*os.File); ok && isTerminal(f) {
			fmt.Fprintln(stderr, "strata: reading the JSON document from stdin; end it with Ctrl-D")
		}
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(file)
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
