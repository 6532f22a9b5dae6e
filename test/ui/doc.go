// Package ui drives the web console (/ui, cluster/console) in headless
// Chromium against a real `strata dev` (issue 20). Its test runs only with
// STRATA_UI=1 and a Chromium binary (`make test-ui`); it saves its
// screenshots under docs/screenshots/ and logs the overview's page weight
// and first paint.
package ui
