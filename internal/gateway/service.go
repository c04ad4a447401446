package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
)

// postRetrieve forwards a retrieve request to memory.retrieve.<tenant> and passes the reply
// through. The retriever validates the request; its errors become problems.
func (g *Gateway) postRetrieve(w http.ResponseWriter, r *http.Request, tenant string) {
	if p := requireJSON(r); p != nil {
		writeProblem(w, r, p)
		return
	}
	body, p := readBody(r, g.cfg.MaxBodyBytes)
	if p != nil {
		writeProblem(w, r, p)
		return
	}
	// A read-your-writes request may wait wait_ms for its turn: the request may take that long
	// on top of the timeout. The retriever checks the value; a bad one adds nothing here.
	var hint struct {
		WaitMS int `json:"wait_ms"`
	}
	_ = json.Unmarshal(body, &hint)
	wait := time.Duration(min(max(hint.WaitMS, 0), events.MaxWaitMS)) * time.Millisecond
	subject, err := events.RetrieveSubject(tenant)
	if err != nil {
		writeProblem(w, r, invalid(err))
		return
	}
	g.request(w, r, subject, body, wait, "agentmem-retriever", retrieveAttempt+wait)
}

// retrieveAttempt bounds one attempt of a retrieve, its wait_ms on top: the retriever answers
// within it unless the request was lost (the server it went through crashed); the request's
// timeout bounds every attempt.
const retrieveAttempt = 5 * time.Second

// deleteUser forgets a user through memory.forget.<tenant> and passes the reply through.
func (g *Gateway) deleteUser(w http.ResponseWriter, r *http.Request, tenant string) {
	user := r.PathValue("user")
	if err := events.ValidateToken("user", user); err != nil {
		writeProblem(w, r, invalid(err))
		return
	}
	body, err := json.Marshal(events.ForgetRequest{User: user})
	if err != nil {
		writeProblem(w, r, problem(http.StatusInternalServerError, "", err.Error()))
		return
	}
	subject, err := events.ForgetSubject(tenant)
	if err != nil {
		writeProblem(w, r, invalid(err))
		return
	}
	g.request(w, r, subject, body, 0, "agentmem-extractor", 0)
}

// request sends body to a service subject and writes its reply: 200 with the body as it is, or
// the service error as a problem with the service's code as its status.
func (g *Gateway) request(w http.ResponseWriter, r *http.Request, subject string, body []byte, extra time.Duration, service string, attempt time.Duration) {
	msg, p := g.call(r, subject, body, extra, service, attempt)
	if p != nil {
		writeProblem(w, r, p)
		return
	}
	writeRaw(w, http.StatusOK, msg.Data)
}

// call sends body to a service subject and returns its reply, or a problem: the failed request,
// or the service error with the service's code as its status. A request that no service
// answered, as while the service's connection moves to another server, or that was answered 503
// (not on "after") is sent again until the request's timeout (client.Request); so is one not
// answered within attempt (0: the request's timeout, one attempt for what may take long).
func (g *Gateway) call(r *http.Request, subject string, body []byte, extra time.Duration, service string, attempt time.Duration) (*nats.Msg, *Problem) {
	ctx, cancel := context.WithTimeout(r.Context(), g.deadline(extra))
	defer cancel()
	req := nats.NewMsg(subject)
	req.Data = body
	// The caller's W3C trace context goes on with the request (the retriever's span is its child).
	for _, h := range []string{"traceparent", "tracestate"} {
		if v := r.Header.Get(h); v != "" {
			req.Header.Set(h, v)
		}
	}
	if attempt <= 0 {
		attempt = g.deadline(extra)
	}
	msg, _, err := client.Request(ctx, g.nc, req, attempt)
	if err != nil {
		return nil, g.requestProblem(err, subject, service, extra)
	}
	if se := client.ServiceErrorOf(msg); se != nil {
		return nil, serviceProblem(se, msg)
	}
	return msg, nil
}

// serviceProblem turns a NATS service error into a problem: the status is the service's code
// (502 when it is not an HTTP error status), field and detail come from the error body, or the
// Nats-Service-Error header.
func serviceProblem(se *client.ServiceError, msg *nats.Msg) *Problem {
	if se.Code < 400 || se.Code > 599 {
		return problem(http.StatusBadGateway, "", fmt.Sprintf("the service answered error code %q: %s", msg.Header.Get(micro.ErrorCodeHeader), msg.Header.Get(micro.ErrorHeader)))
	}
	detail := se.Message
	if se.Field != "" && !strings.HasPrefix(detail, se.Field) {
		detail = se.Field + ": " + detail
	}
	return problem(se.Code, se.Field, detail)
}

// requestProblem maps a failed request: 504 when the service did not answer in time, 503 when
// none is running or the connection is gone.
func (g *Gateway) requestProblem(err error, subject, service string, extra time.Duration) *Problem {
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout):
		return problem(http.StatusGatewayTimeout, "", fmt.Sprintf("%s did not answer on %s within %s", service, subject, g.deadline(extra)))
	case errors.Is(err, nats.ErrNoResponders):
		return problem(http.StatusServiceUnavailable, "", fmt.Sprintf("no %s is running (nothing answers on %s)", service, subject))
	case errors.Is(err, context.Canceled):
		return problem(http.StatusServiceUnavailable, "", "the request was cancelled")
	default:
		g.log.Warn().Err(err).Str("subject", subject).Msg("request failed")
		return problem(http.StatusServiceUnavailable, "", fmt.Sprintf("requesting %s: %v", subject, err))
	}
}

// requireJSON accepts a request without a content type or with a JSON one, else 415.
func requireJSON(r *http.Request) *Problem {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return nil
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json")) {
		return nil
	}
	return problem(http.StatusUnsupportedMediaType, "content-type", fmt.Sprintf("content-type %q: want application/json", ct))
}
