//go:build !unix

package pgserver

import (
	"context"
	"errors"
)

// Bins are the PostgreSQL programs a server needs.
type Bins struct {
	Initdb, PgCtl, Postgres, Psql string
}

// Options configures Start.
type Options struct {
	User     string
	Settings []string
	Bins     *Bins
}

// Server is a running throwaway PostgreSQL server (unix only).
type Server struct {
	Bins Bins
	Dir  string
	Port int
	User string
}

var errUnsupported = errors.New("throwaway PostgreSQL servers are started on unix systems only")

// FindBins reports that this system cannot start throwaway servers.
func FindBins() (Bins, error) { return Bins{}, errUnsupported }

// Start reports that this system cannot start throwaway servers.
func Start(context.Context, string, *Options) (*Server, error) { return nil, errUnsupported }

func (s *Server) URL(string) string                { return "" }
func (s *Server) Restart(context.Context) error    { return errUnsupported }
func (s *Server) StopServer(context.Context) error { return errUnsupported }
func (s *Server) Resume(context.Context) error     { return errUnsupported }
func (s *Server) Stop() error                      { return nil }
