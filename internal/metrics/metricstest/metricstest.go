// Package metricstest scrapes a Prometheus endpoint over HTTP in tests and reads values out of
// the text format, so a test asserts what a Prometheus server would see.
package metricstest

import (
	"fmt"
	"net/http"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Families are the metric families of one scrape, by name.
type Families map[string]*dto.MetricFamily

// Scrape GETs url (a /metrics endpoint) and parses the text format.
func Scrape(t testing.TB, url string) Families {
	t.Helper()
	f, err := ScrapeErr(url)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// ScrapeErr is Scrape returning the error, for bounded polling.
func ScrapeErr(url string) (Families, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain; version=0.0.4")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, res.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(res.Body)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", url, err)
	}
	return Families(fams), nil
}

// Has reports whether the family name was exposed.
func (f Families) Has(name string) bool { _, ok := f[name]; return ok }

// Value sums the series of the counter, gauge or untyped family name whose labels include the
// given pairs ("label", "value", ...); for a histogram it sums the sample counts. A family or
// series that is absent counts 0.
func (f Families) Value(name string, pairs ...string) float64 {
	fam, ok := f[name]
	if !ok {
		return 0
	}
	var sum float64
	for _, m := range fam.GetMetric() {
		if !matches(m, pairs) {
			continue
		}
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Histogram != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		case m.Untyped != nil:
			sum += m.GetUntyped().GetValue()
		}
	}
	return sum
}

func matches(m *dto.Metric, pairs []string) bool {
	for i := 0; i+1 < len(pairs); i += 2 {
		found := false
		for _, l := range m.GetLabel() {
			if l.GetName() == pairs[i] && l.GetValue() == pairs[i+1] {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
