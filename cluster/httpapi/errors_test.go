package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/strata-ledger/strata/cluster/internal/httpx"
	"github.com/strata-ledger/strata/fsm"
)

// Finding 10 of issue 17: a 413 names the field and the limit it broke.
func TestFinding10_LimitErrorsNameTheFieldAndTheLimit(t *testing.T) {
	err := eventError(fmt.Errorf("event 3: %w", &fsm.LimitError{Field: "body.reason", Limit: 1024, Got: 4096}))
	var ae *httpx.APIError
	if !errors.As(err, &ae) || ae.Status != http.StatusRequestEntityTooLarge ||
		ae.Details["limit"] != 1024 || ae.Details["field"] != "body.reason" {
		t.Fatalf("got %#v", err)
	}
}
