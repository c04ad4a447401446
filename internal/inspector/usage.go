package inspector

import (
	"context"
	"net/http"

	"github.com/agentmem/agentmem/pkg/memory"
)

// handleUsage answers the usage report of every tenant shown: LLM calls and tokens per session
// and tenant.
func (i *Inspector) handleUsage(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := i.bound(r)
	defer cancel()
	rep, err := i.usage.Report(ctx, "")
	if err != nil {
		i.fail(w, r, "reading usage", err)
		return
	}
	writeJSON(w, http.StatusOK, i.filterUsage(r.Context(), rep))
}

func (i *Inspector) handleTenantUsage(w http.ResponseWriter, r *http.Request) {
	tenant, ok := i.token(w, r, "tenant")
	if !ok {
		return
	}
	ctx, cancel := i.bound(r)
	defer cancel()
	rep, err := i.usage.Report(ctx, tenant)
	if err != nil {
		i.fail(w, r, "reading usage", err)
		return
	}
	writeJSON(w, http.StatusOK, rep)
}

// filterUsage keeps the tenants the call may see, with the total recomputed.
func (i *Inspector) filterUsage(ctx context.Context, rep memory.UsageReport) memory.UsageReport {
	if i.allowed == nil && scope(ctx) == "" {
		return rep
	}
	out := memory.UsageReport{Tenants: []memory.TenantUsage{}}
	for _, t := range rep.Tenants {
		if i.shows(ctx, t.Tenant) {
			out.Tenants = append(out.Tenants, t)
			out.Total = out.Total.Add(t.Usage)
		}
	}
	return out
}
