package inspector

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/agentmem/agentmem/pkg/events"
)

// ErrTokenRequired is returned (wrapped) by Config.Validate, CheckExposure and New when the
// inspector would serve every tenant's memory without a token on an address that is not
// loopback.
var ErrTokenRequired = errors.New("inspector: a token is required when listening on a non-loopback address")

// CheckExposure reports whether an inspector without a token may be served on listen, the
// host:port its HTTP server listens on: with a token any address will do; without one only a
// loopback address (127.0.0.0/8, ::1, "localhost"). An empty host (":8080") listens on every
// interface and an empty or unparsable listen cannot be shown to be loopback, so both need a
// token. The error wraps ErrTokenRequired and names the address.
func CheckExposure(listen, token string) error {
	if token != "" || IsLoopback(listen) {
		return nil
	}
	shown := listen
	if shown == "" {
		shown = "no address given"
	}
	return fmt.Errorf("%w (%s); bind to 127.0.0.1 or ::1, or set a token", ErrTokenRequired, shown)
}

// IsLoopback reports whether addr, a host:port or a bare host, names only loopback: an IP
// address in 127.0.0.0/8 or ::1 (IPv4-mapped included), or the name "localhost". Every other
// name, the unspecified addresses (0.0.0.0, ::), an empty host and an empty addr are not.
func IsLoopback(addr string) bool {
	host := addr
	if h, _, err := net.SplitHostPort(addr); err == nil {
		host = h
	} else {
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	}
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || ip.Zone() != "" {
		return false
	}
	return ip.Unmap().IsLoopback()
}

// loopbackOnly refuses, with 403, every API call whose remote address is not loopback: the
// inspector without a token serves loopback clients only, even should its listener be reachable
// from elsewhere (a wrong bind, a port forward).
func (i *Inspector) loopbackOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !IsLoopback(r.RemoteAddr) {
			i.log.Warn().Str("remote", r.RemoteAddr).Str("path", r.URL.Path).Msg("refused: no inspector token, and the caller is not on loopback")
			writeProblem(w, r, http.StatusForbidden,
				"this inspector has no token and answers loopback clients only; "+
					"set an inspector token to reach it from "+r.RemoteAddr)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// problem is an RFC 9457 problem body, shaped like the HTTP API's (package gateway), that also
// carries the inspector's own error member, which the page reads.
type problem struct {
	Type     string             `json:"type"`
	Title    string             `json:"title"`
	Status   int                `json:"status"`
	Detail   string             `json:"detail,omitempty"`
	Instance string             `json:"instance,omitempty"`
	Error    events.ErrorDetail `json:"error"`
}

// writeProblem answers status as application/problem+json.
func writeProblem(w http.ResponseWriter, r *http.Request, status int, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	writeJSONBody(w, status, problem{
		Type: "about:blank", Title: http.StatusText(status), Status: status, Detail: detail, Instance: r.URL.Path,
		Error: events.ErrorDetail{Code: status, Message: detail},
	})
}
