package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/strata-db/strata/internal/safetext"
)

// devVersion is the version of a build from a checkout.
const devVersion = "0.1.0-dev"

// version is the release version. Release builds set it with -ldflags "-X main.version=v1.2.3"; the version of a
// `go install …@v1.2.3` is read from the build information.
var version = devVersion

type versionOptions struct {
	json bool
}

type versionInfo struct {
	Version string `json:"version"`
	Commit  string `json:"commit,omitempty"`
	Go      string `json:"go"`
	OS      string `json:"os"`
	Arch    string `json:"arch"`
}

func newVersionCommand(_ *globalOptions) *cobra.Command {
	o := &versionOptions{}
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version of strata",
		Args:  cobra.NoArgs,
		RunE: action(func(cmd *cobra.Command, _ []string) error {
			return printVersion(cmd.OutOrStdout(), o)
		}),
	}
	cmd.Flags().BoolVar(&o.json, "json", false, "print JSON")
	return cmd
}

func currentVersion() versionInfo {
	v := versionInfo{Version: version, Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if m := bi.Main.Version; m != "" && m != "(devel)" && version == devVersion {
			v.Version = m
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				v.Commit = s.Value
			}
		}
	}
	return v
}

func printVersion(w io.Writer, o *versionOptions) error {
	v := currentVersion()
	if o.json {
		return writeJSON(w, v)
	}
	commit := ""
	if v.Commit != "" {
		commit = " " + v.Commit[:min(12, len(v.Commit))]
	}
	_, err := fmt.Fprintf(w, "strata %s%s (%s %s/%s)\n", v.Version, commit, v.Go, v.OS, v.Arch)
	return err
}

// writeJSON writes v as indented JSON, the --json output of every command.
// Characters that could drive a terminal are \u escapes in it (safetext.JSON), which any JSON reader reads the same.
func writeJSON(w io.Writer, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(safetext.JSON(b.Bytes()))
	return err
}

// marshalCompact returns v as compact JSON, without escaping <, > and & (the output is not HTML).
func marshalCompact(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
