package retrieve

import "github.com/agentmem/agentmem/internal/search"

// RewriteStoredTurn returns the stored view data (of tenant and user) with the text of turn id
// replaced by content, its terms with it: a test's way to tell a view read from the value from
// one read from the turns stream.
func RewriteStoredTurn(tenant, user string, data []byte, id, content string) ([]byte, error) {
	v, err := decodeView(userKey{tenant, user}, data)
	if err != nil {
		return nil, err
	}
	ids := map[string]uint32{}
	for i, t := range v.Terms {
		ids[t] = uint32(i)
	}
	for si := range v.Sessions {
		for ti := range v.Sessions[si].Turns {
			t := &v.Sessions[si].Turns[ti]
			if t.ID != id {
				continue
			}
			t.Content, t.Terms = content, nil
			for _, term := range search.Terms(content) {
				n, ok := ids[term]
				if !ok {
					n = uint32(len(v.Terms))
					ids[term] = n
					v.Terms = append(v.Terms, term)
				}
				t.Terms = append(t.Terms, n)
			}
		}
	}
	return encodeView(v)
}

// StoredSession is a session of a stored view: its turns' ids and the revision of the header it
// was read at.
type StoredSession struct {
	Turns []string
	Rev   uint64
}

// StoredSessions returns the sessions of a stored view's data (of tenant and user).
func StoredSessions(tenant, user string, data []byte) (map[string]StoredSession, error) {
	v, err := decodeView(userKey{tenant, user}, data)
	if err != nil {
		return nil, err
	}
	out := map[string]StoredSession{}
	for _, s := range v.Sessions {
		ss := StoredSession{Rev: s.Rev}
		for _, t := range s.Turns {
			ss.Turns = append(ss.Turns, t.ID)
		}
		out[s.Session] = ss
	}
	return out, nil
}

// ViewFile is the file of tenant's user's stored view in a Config.ViewDir.
func ViewFile(dir, tenant, user string) string {
	return viewFiles{dir: dir}.path(userKey{tenant, user})
}
