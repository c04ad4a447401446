package memory

import (
	"slices"
	"sync"
)

// Usage counts LLM calls and their tokens.
type Usage struct {
	Calls        int `json:"calls"`
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
}

// Add returns the field-wise sum of u and o.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		Calls:        u.Calls + o.Calls,
		InputTokens:  u.InputTokens + o.InputTokens,
		OutputTokens: u.OutputTokens + o.OutputTokens,
	}
}

// UsageLedger sums LLM usage per tenant and session. It is safe for
// concurrent use; the zero value is not ready, use NewUsageLedger.
type UsageLedger struct {
	mu      sync.Mutex
	tenants map[string]*tenantLedger
}

// tenantLedger is one tenant's total and its sessions.
type tenantLedger struct {
	total    Usage
	sessions map[string]Usage
}

// NewUsageLedger returns an empty UsageLedger.
func NewUsageLedger() *UsageLedger {
	return &UsageLedger{tenants: make(map[string]*tenantLedger)}
}

// Record adds u to the usage of the given tenant and session.
func (l *UsageLedger) Record(tenant, session string, u Usage) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t, ok := l.tenants[tenant]
	if !ok {
		t = &tenantLedger{sessions: make(map[string]Usage)}
		l.tenants[tenant] = t
	}
	t.total = t.total.Add(u)
	t.sessions[session] = t.sessions[session].Add(u)
}

// Session returns the usage recorded for one session of a tenant, zero if
// there is none.
func (l *UsageLedger) Session(tenant, session string) Usage {
	l.mu.Lock()
	defer l.mu.Unlock()
	if t, ok := l.tenants[tenant]; ok {
		return t.sessions[session]
	}
	return Usage{}
}

// Tenant returns the usage recorded for all sessions of a tenant, zero if
// there is none.
func (l *UsageLedger) Tenant(tenant string) Usage {
	l.mu.Lock()
	defer l.mu.Unlock()
	if t, ok := l.tenants[tenant]; ok {
		return t.total
	}
	return Usage{}
}

// UsageReport is a snapshot of a UsageLedger, tenants and sessions sorted by
// name.
type UsageReport struct {
	Tenants []TenantUsage `json:"tenants"`
	Total   Usage         `json:"total"`
}

// TenantUsage is one tenant's usage in a UsageReport.
type TenantUsage struct {
	Tenant   string         `json:"tenant"`
	Usage    Usage          `json:"usage"`
	Sessions []SessionUsage `json:"sessions"`
}

// SessionUsage is one session's usage in a UsageReport.
type SessionUsage struct {
	Session string `json:"session"`
	Usage   Usage  `json:"usage"`
}

// Report returns a snapshot of the ledger, sorted by tenant and then by
// session, so the same usage always gives the same report. Its slices are
// never nil.
func (l *UsageLedger) Report() UsageReport {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := UsageReport{Tenants: make([]TenantUsage, 0, len(l.tenants))}
	for _, name := range sortedKeys(l.tenants) {
		t := l.tenants[name]
		tu := TenantUsage{Tenant: name, Usage: t.total, Sessions: make([]SessionUsage, 0, len(t.sessions))}
		for _, s := range sortedKeys(t.sessions) {
			tu.Sessions = append(tu.Sessions, SessionUsage{Session: s, Usage: t.sessions[s]})
		}
		r.Tenants = append(r.Tenants, tu)
		r.Total = r.Total.Add(t.total)
	}
	return r
}

// sortedKeys returns the keys of m in ascending order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
