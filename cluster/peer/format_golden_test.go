package peer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/strata-ledger/strata/cluster/group"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/internal/golden"
	"github.com/strata-ledger/strata/transport/api"
)

// The golden answers of FORMAT.md, as json.Marshal writes them.
const (
	goldenProposeResponse = `{"index":1234,"results":[` +
		`{"outcome":1,"seq":41},` +
		`{"outcome":2,"seq":17},` +
		`{"outcome":3,"seq":42,"code":"terminal","message":"fsm: job is in a terminal state"},` +
		`{"outcome":4,"code":"unknown_job","message":"fsm: unknown job"}]}`
	goldenProposeManyResponse = `{"batches":[` +
		`{"status":200,"index":1235,"results":[{"outcome":1,"seq":43}]},` +
		`{"status":400,"index":0,"results":null,"error":{"code":"bad_request","message":"cluster: invalid batch: 1 bytes"}}]}`
	goldenProposeManyNotLeader = `{"batches":[` +
		`{"index":0,"results":null,"leader":"gate2","error":{"code":"unavailable",` +
		`"message":"cluster: not the raft leader, leader is gate2 at 10.0.0.2:7000: node is not the leader"}}]}`
)

// Fixed values of the golden answers.
var (
	goldenResults = []fsm.Result{
		{Outcome: fsm.OutcomeApplied, Seq: 41},
		{Outcome: fsm.OutcomeDuplicate, Seq: 17},
		{Outcome: fsm.OutcomeAbsorbed, Seq: 42, Err: fsm.ErrTerminal},
		{Outcome: fsm.OutcomeRejected, Err: fsm.ErrUnknownJob},
	}
	goldenManyProposals = []group.Proposal{{Index: 1235, Results: []fsm.Result{{Outcome: fsm.OutcomeApplied, Seq: 43}}}, {}}
	goldenManyErrs      = []error{nil, fmt.Errorf("%w: %d bytes", group.ErrInvalidBatch, 1)}
	goldenNotLeader     = &group.NotLeaderError{Leader: group.Leader{ID: "gate2", Addr: "10.0.0.2:7000"}, Err: errors.New("node is not the leader")}
)

// formatDoc returns FORMAT.md.
func formatDoc(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile("FORMAT.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(doc)
}

// goldenJSON returns the fenced json block after "<!-- golden:name -->" in
// FORMAT.md, compacted.
func goldenJSON(t *testing.T, name string) string {
	t.Helper()
	block := golden.Block(t, "FORMAT.md", name, "json")
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(block)); err != nil {
		t.Fatalf("golden block %q: %v", name, err)
	}
	return buf.String()
}

// checkGolden checks that v marshals to golden, that FORMAT.md's block
// name says the same, and that golden decodes back to v.
func checkGolden[T any](t *testing.T, name, golden string, v T) {
	t.Helper()
	got, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != golden {
		t.Errorf("json.Marshal\n%s\ngolden\n%s", got, golden)
	}
	if doc := goldenJSON(t, name); doc != golden {
		t.Errorf("FORMAT.md block %q\n%s\ngolden\n%s", name, doc, golden)
	}
	var back T
	if err := json.Unmarshal([]byte(golden), &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, v) {
		t.Errorf("decoding the golden JSON gives\n%+v\nwant\n%+v", back, v)
	}
}

func TestFormat_GoldenProposeResponse(t *testing.T) {
	status, resp := proposeAnswer(group.Proposal{Index: 1234, Results: goldenResults}, nil)
	if status != http.StatusOK {
		t.Fatalf("status %d", status)
	}
	checkGolden(t, "propose-response", goldenProposeResponse, resp)

	// What the follower makes of it.
	var back ProposeResponse
	if err := json.Unmarshal([]byte(goldenProposeResponse), &back); err != nil {
		t.Fatal(err)
	}
	p, err := back.proposal(group.Leader{ID: "gate1"}, http.StatusOK)
	if err != nil || p.Index != 1234 || len(p.Results) != len(goldenResults) {
		t.Fatalf("proposal = %+v, %v", p, err)
	}
	for i, r := range p.Results {
		want := goldenResults[i]
		if r.Outcome != want.Outcome || r.Seq != want.Seq || (r.Err == nil) != (want.Err == nil) ||
			(want.Err != nil && (!errors.Is(r.Err, want.Err) || r.Err.Error() != want.Err.Error())) {
			t.Errorf("result %d: %+v, want %+v", i, r, want)
		}
	}
}

func TestFormat_GoldenProposeManyResponse(t *testing.T) {
	out := ProposeManyResponse{Batches: make([]ProposeResponse, len(goldenManyProposals))}
	for i := range goldenManyProposals {
		status, resp := proposeAnswer(goldenManyProposals[i], goldenManyErrs[i])
		resp.Status = status
		out.Batches[i] = resp
	}
	checkGolden(t, "propose-many-response", goldenProposeManyResponse, out)

	status, whole := proposeAnswer(group.Proposal{}, goldenNotLeader)
	if status != http.StatusMisdirectedRequest {
		t.Fatalf("not the leader: status %d", status)
	}
	checkGolden(t, "propose-many-not-leader", goldenProposeManyNotLeader, ProposeManyResponse{Batches: []ProposeResponse{whole}})

	// What the follower makes of the per-batch statuses.
	var back ProposeManyResponse
	if err := json.Unmarshal([]byte(goldenProposeManyResponse), &back); err != nil {
		t.Fatal(err)
	}
	if p, err := back.Batches[0].proposal(group.Leader{ID: "gate1"}, back.Batches[0].Status); err != nil || p.Index != 1235 {
		t.Errorf("batch 0: %+v, %v", p, err)
	}
	if _, err := back.Batches[1].proposal(group.Leader{ID: "gate1"}, back.Batches[1].Status); !errors.Is(err, group.ErrInvalidBatch) {
		t.Errorf("batch 1: %v, want ErrInvalidBatch", err)
	}
	var nl *group.NotLeaderError
	if _, err := whole.proposal(group.Leader{ID: "gate1"}, status); !errors.As(err, &nl) || nl.Leader.ID != "gate2" {
		t.Errorf("whole call: %v, want a NotLeaderError naming gate2", err)
	}
}

// formatProposer answers with the golden values.
type formatProposer struct{ notLeader error }

func (p *formatProposer) Propose(context.Context, []byte) (group.Proposal, error) {
	if p.notLeader != nil {
		return group.Proposal{}, p.notLeader
	}
	return group.Proposal{Index: 1234, Results: goldenResults}, nil
}

func (p *formatProposer) ProposeMany(context.Context, [][]byte) ([]group.Proposal, []error) {
	return goldenManyProposals, goldenManyErrs
}

func (p *formatProposer) CheckLeader() error   { return p.notLeader }
func (p *formatProposer) Leader() group.Leader { return group.Leader{} }

// call serves one internal call with h and returns its status and body
// without the final newline.
func call(h http.HandlerFunc, path, token string, body []byte) (int, string) {
	r := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	w := httptest.NewRecorder()
	h(w, r)
	return w.Code, strings.TrimSuffix(w.Body.String(), "\n")
}

// TestFormat_HandlersAnswerTheGoldenBodies serves the calls with a
// proposer that returns the golden values: the bodies on the wire are the
// golden JSON, and the error envelopes are FORMAT.md's.
func TestFormat_HandlersAnswerTheGoldenBodies(t *testing.T) {
	ps := &Peers{cfg: Config{NodeID: "gate1", ClusterToken: "tok", Proposer: &formatProposer{}}}
	entry := group.AppendEntry(nil, [][]byte{{fsm.BatchVersion, 1}, {9}})
	for _, tc := range []struct {
		name   string
		ps     *Peers
		h      func(*Peers, http.ResponseWriter, *http.Request)
		path   string
		token  string
		body   []byte
		status int
		want   string
	}{
		{"propose", ps, (*Peers).handlePropose, ProposePath, "tok", []byte{1, 1}, 200, goldenProposeResponse},
		{"propose-many", ps, (*Peers).handleProposeMany, ProposeManyPath, "tok", entry, 200, goldenProposeManyResponse},
		{"propose-many, not the leader", &Peers{cfg: Config{ClusterToken: "tok", Proposer: &formatProposer{notLeader: goldenNotLeader}}},
			(*Peers).handleProposeMany, ProposeManyPath, "tok", entry, 421, goldenProposeManyNotLeader},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := func(w http.ResponseWriter, r *http.Request) { tc.h(tc.ps, w, r) }
			status, body := call(h, tc.path, tc.token, tc.body)
			if status != tc.status || body != tc.want {
				t.Fatalf("answer %d %s\nwant %d %s", status, body, tc.status, tc.want)
			}
		})
	}

	_, rest, _ := strings.Cut(formatDoc(t), "A call that fails before its handler runs")
	_, block, _ := strings.Cut(rest, "```json\n")
	block, _, _ = strings.Cut(block, "```")
	lines := strings.Split(strings.TrimSpace(block), "\n")
	if len(lines) != 2 {
		t.Fatalf("FORMAT.md shows %d error envelopes, want 2", len(lines))
	}
	if status, body := call(ps.handlePropose, ProposePath, "", []byte{1, 1}); status != 401 || body != lines[0] {
		t.Errorf("without the token: %d %s\nFORMAT.md says %s", status, body, lines[0])
	}
	if status, body := call(ps.handleDeliver, DeliverPath+"?group=global", "wrong", nil); status != 401 || body != lines[0] {
		t.Errorf("deliver with a wrong token: %d %s", status, body)
	}
	if status, body := call(ps.handlePropose, ProposePath, "tok", make([]byte, maxInternalBody+1)); status != 413 || body != lines[1] {
		t.Errorf("over the limit: %d %s\nFORMAT.md says %s", status, body, lines[1])
	}
	if status, body := call(ps.handleProposeMany, ProposeManyPath, "tok", []byte{2, 1, 1, 0}); status != 400 ||
		!strings.Contains(body, `"code":"bad_request"`) || !strings.Contains(body, "malformed raft entry") {
		t.Errorf("bad envelope: %d %s", status, body)
	}
	r := httptest.NewRequest(http.MethodPost, DeliverPath+"?group=global", bytes.NewReader([]byte{1, 1}))
	r.Header.Set("Authorization", "Bearer tok")
	r.Header.Add(api.HeaderForwardedBy, "mgr1")
	r.Header.Add(api.HeaderForwardedBy, "gate1")
	w := httptest.NewRecorder()
	ps.handleDeliver(w, r)
	if w.Code != http.StatusLoopDetected || !strings.Contains(w.Body.String(), "relay loop through gate1") {
		t.Errorf("relay loop: %d %s", w.Code, w.Body)
	}
	if status, body := call(ps.handleDeliver, DeliverPath+"?group=Bad", "tok", []byte{1, 1}); status != 400 || !strings.Contains(body, "bad group") {
		t.Errorf("bad group: %d %s", status, body)
	}
}

// fsmSentinels names the sentinels FORMAT.md's result-code table may list.
var fsmSentinels = map[string]error{
	"ErrEventConflict": fsm.ErrEventConflict, "ErrUnknownJob": fsm.ErrUnknownJob, "ErrJobExists": fsm.ErrJobExists,
	"ErrUnknownRegion": fsm.ErrUnknownRegion, "ErrTenantMismatch": fsm.ErrTenantMismatch,
	"ErrPrecedesCreation": fsm.ErrPrecedesCreation, "ErrTerminal": fsm.ErrTerminal,
	"ErrIllegalTransition": fsm.ErrIllegalTransition, "ErrStaleFence": fsm.ErrStaleFence,
	"ErrUnknownWorkflow": fsm.ErrUnknownWorkflow, "ErrWorkflowExists": fsm.ErrWorkflowExists,
	"ErrUnknownWorker": fsm.ErrUnknownWorker, "ErrWorkerExists": fsm.ErrWorkerExists,
	"ErrWorkerMismatch": fsm.ErrWorkerMismatch, "ErrLimit": fsm.ErrLimit, "ErrInvalidEvent": fsm.ErrInvalidEvent,
	"ErrMalformed": fsm.ErrMalformed,
}

// TestFormat_ResultCodesMatchFORMAT: the result-code table of FORMAT.md is
// resultCodes, row for row and in order.
func TestFormat_ResultCodesMatchFORMAT(t *testing.T) {
	rows := regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\| `fsm\\.(Err[A-Za-z]+)` \\| [^|]+ \\|$").FindAllStringSubmatch(formatDoc(t), -1)
	if len(rows) != len(resultCodes) {
		t.Errorf("FORMAT.md lists %d result codes, resultCodes %d", len(rows), len(resultCodes))
	}
	seen := map[string]bool{"error": true}
	for i, c := range resultCodes {
		if seen[c.code] {
			t.Errorf("code %q used twice (or is the fallback)", c.code)
		}
		seen[c.code] = true
		if i >= len(rows) {
			t.Errorf("FORMAT.md does not list %q", c.code)
			continue
		}
		if code, name := rows[i][1], rows[i][2]; code != c.code || fsmSentinels[name] != c.err {
			t.Errorf("FORMAT.md row %d is %s = fsm.%s; resultCodes has %s = %v", i, code, name, c.code, c.err)
		}
	}
}

// TestFormat_ResultCodesRoundTrip: every fsm sentinel of resultCodes, bare
// or wrapped, crosses the wire (encode, JSON, decode) as an error that
// errors.Is still matches, with its text, and a relay re-encodes it as it
// was.
func TestFormat_ResultCodesRoundTrip(t *testing.T) {
	type tcase struct {
		err  error
		code string
	}
	var cases []tcase
	for _, c := range resultCodes {
		cases = append(cases, tcase{c.err, c.code}, tcase{fmt.Errorf("event 3: %w", c.err), c.code})
	}
	cases = append(cases,
		tcase{&fsm.LimitError{Field: "batch events", Limit: 10_000, Got: 10_001}, "limit"},
		tcase{&fsm.FenceError{}, "stale_fence"},
		tcase{&fsm.TransitionError{}, "illegal_transition"},
		tcase{errors.New("fsm: something no code names"), "error"},
	)
	for _, tc := range cases {
		rs := []fsm.Result{{Outcome: fsm.OutcomeRejected, Err: tc.err}}
		wire := encodeResults(rs)
		if wire[0].Code != tc.code || ResultCode(tc.err) != tc.code {
			t.Errorf("%v: code %q (ResultCode %q), want %q", tc.err, wire[0].Code, ResultCode(tc.err), tc.code)
		}
		data, err := json.Marshal(ProposeResponse{Index: 7, Results: wire})
		if err != nil {
			t.Fatal(err)
		}
		var back ProposeResponse
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatal(err)
		}
		got := decodeResults(back.Results)
		if len(got) != 1 || got[0].Outcome != fsm.OutcomeRejected || got[0].Err == nil || got[0].Err.Error() != tc.err.Error() {
			t.Fatalf("%v: decoded %+v", tc.err, got)
		}
		for _, c := range resultCodes {
			if want := c.code == tc.code; errors.Is(got[0].Err, c.err) != want {
				t.Errorf("%v: after the wire errors.Is(%v) = %v, want %v", tc.err, c.err, !want, want)
			}
		}
		if again := encodeResults(got); !reflect.DeepEqual(again, wire) {
			t.Errorf("%v: a relay re-encodes %+v as %+v", tc.err, wire, again)
		}
	}
	// A code this node does not know: an error with the message, no
	// sentinel, relayed as "error".
	got := decodeResults([]ResultWire{{Outcome: 4, Code: "from_the_future", Message: "m"}})
	for _, c := range resultCodes {
		if errors.Is(got[0].Err, c.err) {
			t.Errorf("unknown code matches %v", c.err)
		}
	}
	if again := encodeResults(got); again[0].Code != "error" || again[0].Message != "m" {
		t.Errorf("unknown code re-encoded as %+v", again[0])
	}
}

// TestFormat_ConstantsMatchFORMAT checks the names and limits FORMAT.md
// states.
func TestFormat_ConstantsMatchFORMAT(t *testing.T) {
	doc := formatDoc(t)
	for _, s := range []string{
		"## `POST " + ProposePath + "`", "## `POST " + ProposeManyPath + "`", "## `POST " + DeliverPath + "?group=G`",
		"| `" + api.HeaderForwardedBy + "` | `api.HeaderForwardedBy`", "`Bearer <cluster token>`",
		"At most\n  1,048,576 bytes (`maxInternalBody`", "At most 1,048,592\n  bytes (`group.MaxEntryBytes`)",
		"at most 8 MiB (`maxInternalResponse`)", "15 s (`CallTimeout`)", "10 s (`coalesceCallTimeout`)",
		"at most 1,024\nbatches (`coalesceMaxBatches`) and 4 calls in flight", "`maxDeliverHops` (3)", "at most 2 nodes",
		"1 applied, 2 duplicate, 3 absorbed, 4 rejected", "**A code never changes meaning and is never reused**",
	} {
		if !strings.Contains(doc, s) {
			t.Errorf("FORMAT.md does not say %q", s)
		}
	}
	if ProposePath != "/internal/v1/propose" || ProposeManyPath != "/internal/v1/propose-many" || DeliverPath != "/internal/v1/deliver" ||
		api.HeaderForwardedBy != "Strata-Forwarded-By" || maxInternalBody != 1_048_576 || group.MaxEntryBytes != 1_048_592 ||
		maxInternalResponse != 8<<20 || CallTimeout != 15*time.Second || coalesceCallTimeout != 10*time.Second ||
		coalesceMaxBatches != 1024 || coalesceInFlight != 4 || maxDeliverHops != 3 || deliverCandidates != 2 ||
		fsm.OutcomeApplied != 1 || fsm.OutcomeDuplicate != 2 || fsm.OutcomeAbsorbed != 3 || fsm.OutcomeRejected != 4 {
		t.Fatal("a constant differs from FORMAT.md")
	}
}

// FuzzDecodeProposeResponse: any answer body, decoded as the caller does
// (at most maxInternalResponse bytes, one JSON value), never panics, builds
// at most one batch and one result per two input bytes, rebuilds an error
// exactly for the results with a code, matching the sentinel of that code
// only, and turns every status into a proposal or an error as FORMAT.md
// says.
func FuzzDecodeProposeResponse(f *testing.F) {
	for _, s := range []string{
		goldenProposeResponse, goldenProposeManyResponse, goldenProposeManyNotLeader,
		`{"error":{"code":"unauthenticated","message":"internal call without the cluster token"}}`,
		`{"batches":[{"status":200,"results":[{"outcome":4,"code":"from_the_future","message":"x"},{"outcome":1,"message":"y"}]}]}`,
		`{"batches":[null,{},{"status":421,"leader":"n1"}]}`, `{"results":[{},{"code":"error"}]}`, `null`, `{}`, `[]`,
	} {
		f.Add([]byte(s))
	}
	leader := group.Leader{ID: "gate1"}
	f.Fuzz(func(t *testing.T, data []byte) {
		var many ProposeManyResponse
		var one ProposeResponse
		errMany := json.NewDecoder(io.LimitReader(bytes.NewReader(data), maxInternalResponse)).Decode(&many)
		errOne := json.NewDecoder(io.LimitReader(bytes.NewReader(data), maxInternalResponse)).Decode(&one)
		var answers []ProposeResponse
		if errMany == nil {
			answers = append(answers, many.Batches...)
		}
		if errOne == nil {
			answers = append(answers, one)
		}
		built := len(many.Batches)
		for _, a := range answers {
			built += len(a.Results)
		}
		if built > len(data)/2 {
			t.Fatalf("%d batches and results from %d bytes", built, len(data))
		}
		for _, a := range answers {
			rs := decodeResults(a.Results)
			if len(rs) != len(a.Results) {
				t.Fatalf("%d results from %d on the wire", len(rs), len(a.Results))
			}
			for i, r := range rs {
				w := a.Results[i]
				if r.Outcome != fsm.Outcome(w.Outcome) || r.Seq != w.Seq || (r.Err != nil) != (w.Code != "") {
					t.Fatalf("result %+v from %+v", r, w)
				}
				if r.Err == nil {
					continue
				}
				if r.Err.Error() != w.Message {
					t.Fatalf("error text %q, message %q", r.Err.Error(), w.Message)
				}
				for _, c := range resultCodes {
					if errors.Is(r.Err, c.err) != (c.code == w.Code) {
						t.Fatalf("code %q: errors.Is(%v) = %v", w.Code, c.err, !(c.code == w.Code))
					}
				}
			}
			for _, status := range []int{a.Status, http.StatusOK, http.StatusBadRequest, http.StatusMisdirectedRequest, http.StatusServiceUnavailable} {
				p, err := a.proposal(leader, status)
				var nl *group.NotLeaderError
				switch {
				case status == http.StatusOK:
					if err != nil || p.Index != a.Index || len(p.Results) != len(a.Results) {
						t.Fatalf("200: %+v, %v", p, err)
					}
				case status == http.StatusMisdirectedRequest:
					if !errors.As(err, &nl) || nl.Leader.ID != a.Leader {
						t.Fatalf("421: %v", err)
					}
				case err == nil:
					t.Fatalf("status %d: no error", status)
				case errors.Is(err, group.ErrInvalidBatch) != (status == http.StatusBadRequest && a.Error != nil):
					t.Fatalf("status %d, error %v: %v", status, a.Error, err)
				}
			}
		}
	})
}
