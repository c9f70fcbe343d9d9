// promcheck is the tests' independent reader of the node's /metrics, built from the Go module proxy with
// the Prometheus libraries pinned in go.mod (test/support/promcheck.ts builds and caches it).
//
//	promcheck decode PROTO TEXT: reads PROTO as the delimited protobuf exposition (expfmt's decoder) and TEXT
//	  as the text one (expfmt's parser); prints, as JSON, each family's type and series count in both, and
//	  for every protobuf histogram its native schema, zero threshold and count, spans and deltas.
//	promcheck observe FACTOR MAXBUCKETS V...: observes the values in a client_golang histogram with those
//	  native options and prints its native buckets as JSON, the reference for the unit tables.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

type span struct {
	Offset int32  `json:"offset"`
	Length uint32 `json:"length"`
}

type native struct {
	Schema        int32   `json:"schema"`
	ZeroThreshold float64 `json:"zeroThreshold"`
	ZeroCount     uint64  `json:"zeroCount"`
	PositiveSpan  []span  `json:"positiveSpan"`
	PositiveDelta []int64 `json:"positiveDelta"`
	NegativeSpan  []span  `json:"negativeSpan"`
	NegativeDelta []int64 `json:"negativeDelta"`
}

type series struct {
	Labels       map[string]string `json:"labels"`
	SampleCount  uint64            `json:"sampleCount"`
	ClassicCount int               `json:"classicBuckets"`
	Native       *native           `json:"native,omitempty"`
}

type family struct {
	Type   string   `json:"type"`
	Series int      `json:"series"`
	Hist   []series `json:"histograms,omitempty"`
}

func spans(in []*dto.BucketSpan) []span {
	out := []span{}
	for _, s := range in {
		out = append(out, span{s.GetOffset(), s.GetLength()})
	}
	return out
}

func nativeOf(h *dto.Histogram) *native {
	if h.Schema == nil {
		return nil
	}
	d := func(v []int64) []int64 {
		if v == nil {
			return []int64{}
		}
		return v
	}
	return &native{
		Schema: h.GetSchema(), ZeroThreshold: h.GetZeroThreshold(), ZeroCount: h.GetZeroCount(),
		PositiveSpan: spans(h.PositiveSpan), PositiveDelta: d(h.PositiveDelta),
		NegativeSpan: spans(h.NegativeSpan), NegativeDelta: d(h.NegativeDelta),
	}
}

func decode(protoPath, textPath string) error {
	pf, err := os.Open(protoPath)
	if err != nil {
		return err
	}
	defer pf.Close()
	proto := map[string]family{}
	dec := expfmt.NewDecoder(pf, expfmt.NewFormat(expfmt.TypeProtoDelim))
	for {
		mf := &dto.MetricFamily{}
		if err := dec.Decode(mf); err == io.EOF {
			break
		} else if err != nil {
			return fmt.Errorf("protobuf: %w", err)
		}
		f := family{Type: mf.GetType().String(), Series: len(mf.Metric)}
		if mf.GetType() == dto.MetricType_HISTOGRAM {
			for _, m := range mf.Metric {
				l := map[string]string{}
				for _, lp := range m.Label {
					l[lp.GetName()] = lp.GetValue()
				}
				h := m.GetHistogram()
				f.Hist = append(f.Hist, series{l, h.GetSampleCount(), len(h.Bucket), nativeOf(h)})
			}
		}
		proto[mf.GetName()] = f
	}
	tf, err := os.Open(textPath)
	if err != nil {
		return err
	}
	defer tf.Close()
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(tf)
	if err != nil {
		return fmt.Errorf("text: %w", err)
	}
	text := map[string]family{}
	for name, mf := range fams {
		text[name] = family{Type: mf.GetType().String(), Series: len(mf.Metric)}
	}
	return json.NewEncoder(os.Stdout).Encode(map[string]any{"protobuf": proto, "text": text})
}

func observe(args []string) error {
	if len(args) < 2 {
		return fmt.Errorf("observe FACTOR MAXBUCKETS V...")
	}
	factor, err := strconv.ParseFloat(args[0], 64)
	if err != nil {
		return err
	}
	maxBuckets, err := strconv.ParseUint(args[1], 10, 32)
	if err != nil {
		return err
	}
	h := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "h", Help: "h", Buckets: []float64{1},
		NativeHistogramBucketFactor: factor, NativeHistogramMaxBucketNumber: uint32(maxBuckets),
	})
	for _, a := range args[2:] {
		v, err := strconv.ParseFloat(a, 64)
		if err != nil {
			return err
		}
		h.Observe(v)
	}
	m := &dto.Metric{}
	if err := h.Write(m); err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(nativeOf(m.GetHistogram()))
}

func main() {
	var err error
	switch {
	case len(os.Args) == 4 && os.Args[1] == "decode":
		err = decode(os.Args[2], os.Args[3])
	case len(os.Args) >= 2 && os.Args[1] == "observe":
		err = observe(os.Args[2:])
	default:
		err = fmt.Errorf("usage: promcheck decode PROTO TEXT | promcheck observe FACTOR MAXBUCKETS V...")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "promcheck:", err)
		os.Exit(1)
	}
}
