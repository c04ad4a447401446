package inspector

import (
	"net/http"

	"github.com/agentmem/agentmem/internal/footprint"
)

// handleMemory answers where the serving process's memory sits (Config.Memory): to a caller that
// may see every tenant only, since one process holds every tenant's views and its figures say
// how much memory the others use.
func (i *Inspector) handleMemory(w http.ResponseWriter, r *http.Request) {
	if i.cfg.Memory == nil {
		writeError(w, http.StatusNotFound, "", "this inspector does not report its process's memory")
		return
	}
	if scope(r.Context()) != "" || i.allowed != nil {
		writeError(w, http.StatusForbidden, "", "the process's memory is shown to an inspector of every tenant only")
		return
	}
	rep := i.cfg.Memory()
	if rep.Structures == nil {
		rep.Structures = []footprint.Structure{}
	}
	if rep.Heap == nil {
		rep.Heap = []footprint.Component{}
	}
	writeJSON(w, http.StatusOK, rep)
}
