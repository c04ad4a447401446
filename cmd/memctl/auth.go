package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/agentmem/agentmem/internal/auth"
)

func authCommand(out io.Writer) *ffcli.Command {
	subs := []*ffcli.Command{authInitCommand(out), authAddCommand(out), authRemoveCommand(out), authListCommand(out)}
	return &ffcli.Command{
		Name:        "auth",
		ShortUsage:  "memctl auth <init|add|remove|list> --dir DIR [flags]",
		ShortHelp:   "create the credentials of tenants' agents and of the workers (NKeys) and the server's authorization",
		Subcommands: subs,
		Exec:        groupExec("auth", subs),
	}
}

func authFlags(fs *flag.FlagSet, dir *string) {
	fs.StringVar(dir, "dir", "./auth", "directory of users.json, auth.conf, server.conf and creds/")
}

func authInitCommand(out io.Writer) *ffcli.Command {
	var dir, cert, key, ca string
	fs := flag.NewFlagSet("memctl auth init", flag.ContinueOnError)
	authFlags(fs, &dir)
	fs.StringVar(&cert, "tls-cert", "", "server certificate file (enables TLS for client connections)")
	fs.StringVar(&key, "tls-key", "", "server key file")
	fs.StringVar(&ca, "tls-ca", "", "CA file (clients' certificates are not required)")
	return &ffcli.Command{
		Name: "init", ShortUsage: "memctl auth init --dir DIR [--tls-cert F --tls-key F]",
		ShortHelp: "create the worker, operator and admin credentials and server.conf (memoryd --nats-config)",
		FlagSet:   fs,
		Exec: func(context.Context, []string) error {
			if (cert == "") != (key == "") {
				return errors.New("--tls-cert and --tls-key go together")
			}
			s, err := auth.Open(dir)
			if err != nil {
				return err
			}
			if len(s.Users) > 0 {
				return fmt.Errorf("%s already holds credentials", dir)
			}
			for _, u := range []struct {
				name string
				role auth.Role
			}{{"worker", auth.RoleWorker}, {"operator", auth.RoleOperator}, {"admin", auth.RoleAdmin}} {
				if _, err := s.Add(u.name, u.role, ""); err != nil {
					return err
				}
			}
			conf := auth.ServerConfig("auth.conf", cert, key, ca)
			if err := os.WriteFile(filepath.Join(dir, "server.conf"), []byte(conf), 0o600); err != nil {
				return err
			}
			fmt.Fprintf(out, "wrote %s/server.conf, auth.conf, keys.json and creds/{worker,operator,admin}.creds\n", dir)
			fmt.Fprintf(out, "run: memoryd --nats-config %s/server.conf --creds %s\n", dir, s.CredsFile("worker"))
			return nil
		},
	}
}

func authAddCommand(out io.Writer) *ffcli.Command {
	var dir, name, role, tenant string
	fs := flag.NewFlagSet("memctl auth add", flag.ContinueOnError)
	authFlags(fs, &dir)
	fs.StringVar(&role, "role", "agent", "agent, worker, operator or admin")
	fs.StringVar(&tenant, "tenant", "", "the agent's tenant (role agent)")
	fs.StringVar(&name, "name", "", "credential name (default: agent-<tenant>-<random>)")
	return &ffcli.Command{
		Name: "add", ShortUsage: "memctl auth add --dir DIR --tenant T [--role agent] [--name N]",
		ShortHelp: "add a credential; then reload the server (SIGHUP to memoryd)",
		FlagSet:   fs,
		Exec: func(context.Context, []string) error {
			s, err := auth.Open(dir)
			if err != nil {
				return err
			}
			if name == "" {
				name = auth.RandomName(role + "-" + tenant)
				if tenant == "" {
					name = auth.RandomName(role)
				}
			}
			u, err := s.Add(name, auth.Role(role), tenant)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "added %s (%s", u.Name, u.Role)
			if u.Tenant != "" {
				fmt.Fprintf(out, " of tenant %s", u.Tenant)
			}
			fmt.Fprintf(out, "): credentials %s\n", s.CredsFile(u.Name))
			if u.Role == auth.RoleAgent {
				fmt.Fprintf(out, "its agents connect with that file (--creds, nats.UserCredentials); they are users of account %s, which sees only tenant %s's subjects\n", auth.AccountName(u.Tenant), u.Tenant)
			}
			return nil
		},
	}
}

func authRemoveCommand(out io.Writer) *ffcli.Command {
	var dir, name string
	fs := flag.NewFlagSet("memctl auth remove", flag.ContinueOnError)
	authFlags(fs, &dir)
	fs.StringVar(&name, "name", "", "credential to revoke (required)")
	return &ffcli.Command{
		Name: "remove", ShortUsage: "memctl auth remove --dir DIR --name N",
		ShortHelp: "revoke a credential; then reload the server (SIGHUP to memoryd)",
		FlagSet:   fs,
		Exec: func(context.Context, []string) error {
			s, err := auth.Open(dir)
			if err != nil {
				return err
			}
			if err := s.Remove(name); err != nil {
				return err
			}
			fmt.Fprintf(out, "removed %s\n", name)
			return nil
		},
	}
}

func authListCommand(out io.Writer) *ffcli.Command {
	var dir string
	fs := flag.NewFlagSet("memctl auth list", flag.ContinueOnError)
	authFlags(fs, &dir)
	return &ffcli.Command{
		Name: "list", ShortUsage: "memctl auth list --dir DIR", ShortHelp: "list the credentials", FlagSet: fs,
		Exec: func(context.Context, []string) error {
			s, err := auth.Open(dir)
			if err != nil {
				return err
			}
			for _, u := range s.Users {
				fmt.Fprintf(out, "%-28s %-8s %-16s %s\n", u.Name, u.Role, u.Tenant, u.NKey)
			}
			if key, ok := s.AccountKey(auth.ServiceAccount); ok {
				fmt.Fprintf(out, "service account %s: %s (JetStream data under <data>/jetstream/%s)\n", auth.ServiceAccount, key, key)
			}
			return nil
		},
	}
}
