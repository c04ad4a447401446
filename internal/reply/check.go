package reply

import (
	"errors"
	"fmt"
	"strings"
)

// ErrRefused is wrapped by Check's errors: the service must neither answer nor act on the
// request.
var ErrRefused = errors.New("reply: reply subject refused")

// Check reports whether a service may answer tenant's request at the reply subject to. Every
// agentmem service answers with a credential that may write streams and buckets, so it answers
// only where an answer can do no harm:
//
//   - "_R_.…": the request crossed an import from the tenant's account; the server routes the
//     answer back into that account and nowhere else (the tenancy model of package auth);
//   - an inbox whose first token is "_INBOX" (a client of the service's own account, or every
//     client when authentication is off), or "_INBOX_<tenant>" (the tenant's own inbox prefix).
//
// Anything else (a stream's or bucket's subject, another tenant's inbox or subjects) is
// refused, and so is an empty reply subject: a request nobody can receive the answer to is not
// served, so it spends nothing of the tenant's budget.
func Check(tenant, to string) error {
	under := func(prefix string) bool { return strings.HasPrefix(to, prefix+".") && len(to) > len(prefix)+1 }
	switch {
	case to == "":
		return fmt.Errorf("%w: the request has no reply subject", ErrRefused)
	case under("_R_"), under("_INBOX"), under("_INBOX_" + tenant):
		return nil
	}
	return fmt.Errorf("%w: %q is not an inbox of tenant %q", ErrRefused, to, tenant)
}
