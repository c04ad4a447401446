package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/pkg/client"
)

// notPermitted is a permissions violation the server reported on memctl's connection: the
// credentials may not publish or subscribe where the command needs to.
type notPermitted struct {
	op      string // "publish to" or "subscribe to"
	subject string
	hint    string // what to do about it, from "; "
}

func (e *notPermitted) Error() string {
	return fmt.Sprintf("not permitted: these credentials may not %s %q%s", e.op, e.subject, e.hint)
}

// violationRE picks the operation and the subject out of the server's permissions violation
// ("Permissions Violation for Publish to \"memory.retrieve.acme\"").
var violationRE = regexp.MustCompile(`(?i)permissions violation for (publish|subscription) to "([^"]*)"`)

// permissions ends a command at the first permissions violation the server reports on its
// connection, with the violation as the context's cause: a request the server refused gets no
// answer, and the command would otherwise wait for its timeout. nats.go reports such violations
// only to the connection's error handler, asynchronously. A step the command can do without runs
// under optional: a violation then ends that step alone.
type permissions struct {
	end  context.CancelCauseFunc
	hint func(subject string) string

	mu   sync.Mutex
	step context.CancelCauseFunc // the optional step running, if any
}

// handle is the connection's error handler. Other asynchronous errors (a slow consumer) are
// printed, as nats.go's default handler would, with memctl's prefix.
func (g *permissions) handle(_ *nats.Conn, _ *nats.Subscription, err error) {
	m := violationRE.FindStringSubmatch(err.Error())
	if !errors.Is(err, nats.ErrPermissionViolation) || m == nil {
		fmt.Fprintln(os.Stderr, "memctl:", err)
		return
	}
	op := "publish to"
	if strings.EqualFold(m[1], "subscription") {
		op = "subscribe to"
	}
	np := &notPermitted{op: op, subject: m[2], hint: g.hint(m[2])}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.step != nil {
		g.step(np)
		return
	}
	g.end(np)
}

// optional runs fn with a context that a permissions violation ends instead of the command.
func (c *common) optional(ctx context.Context, fn func(context.Context) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if c.perms != nil {
		c.perms.mu.Lock()
		c.perms.step = cancel
		c.perms.mu.Unlock()
		defer func() {
			c.perms.mu.Lock()
			c.perms.step = nil
			c.perms.mu.Unlock()
		}()
	}
	err := fn(ctx)
	var np *notPermitted
	if err != nil && errors.As(context.Cause(ctx), &np) {
		return np
	}
	return err
}

// guarded runs exec with a context that the first permissions violation on the command's
// connection ends; that violation is then the command's error.
func (c *common) guarded(exec func(context.Context, []string) error) func(context.Context, []string) error {
	return func(ctx context.Context, args []string) error {
		ctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		c.perms = &permissions{end: cancel, hint: c.permissionHint}
		err := exec(ctx, args)
		var np *notPermitted
		if err != nil && errors.As(context.Cause(ctx), &np) {
			return np
		}
		return err
	}
}

// permissionHint says why the credentials may not use subject and what to do.
func (c *common) permissionHint(subject string) string {
	const table = " (docs/security.md lists the credentials each memctl command needs)"
	if strings.HasPrefix(subject, "$JS.") || strings.HasPrefix(subject, "$KV.") {
		return "; this command reads streams and buckets, which takes the admin credentials" + table
	}
	owner := credsTenant(c.conn.Creds)
	if owner != "" && owner != c.tenant {
		return fmt.Sprintf("; they are an agent's of tenant %q and --tenant is %q: give --tenant %s, or credentials of tenant %q", owner, c.tenant, owner, c.tenant)
	}
	if owner != "" && strings.HasPrefix(subject, "memory.session.") {
		return fmt.Sprintf("; agent credentials made before agentmem answered sessions on memory.session.<tenant> lack it: make new ones (memctl auth add --tenant %s, then reload the server)", owner)
	}
	return table
}

// credsTenant returns the tenant of an agent's credentials file (the tenant of the
// memory.retrieve.<tenant> subject its user JWT may publish to), or "" when the file is not one.
func credsTenant(file string) string {
	if file == "" {
		return ""
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return ""
	}
	token, err := jwt.ParseDecoratedJWT(data)
	if err != nil {
		return ""
	}
	uc, err := jwt.DecodeUserClaims(token)
	if err != nil {
		return ""
	}
	for _, s := range uc.Pub.Allow {
		if t, ok := strings.CutPrefix(s, "memory.retrieve."); ok && !strings.ContainsAny(t, ".*>") {
			return t
		}
	}
	return ""
}

// connect opens the command's NATS connection; permissions violations end the command
// (guarded) instead of being printed.
func (c *common) connect() (*nats.Conn, error) {
	nc, err := c.conn.Connect("memctl")
	if err != nil {
		return nil, err
	}
	if c.perms != nil {
		nc.SetErrorHandler(c.perms.handle)
	}
	return nc, nil
}

// client returns an agentmem client of --tenant on a new connection, and the function that
// closes it.
func (c *common) client() (*client.Client, func(), error) {
	nc, err := c.connect()
	if err != nil {
		return nil, nil, err
	}
	cl, err := client.New(nc, client.Options{Tenant: c.tenant, Source: "agentmem/memctl", Timeout: 10 * time.Second})
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return cl, nc.Close, nil
}

// jetstream returns a JetStream context on a new connection, for the commands that read
// streams and buckets (admin credentials, with authentication on).
func (c *common) jetstream() (jetstream.JetStream, *nats.Conn, error) {
	nc, err := c.connect()
	if err != nil {
		return nil, nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return js, nc, nil
}
