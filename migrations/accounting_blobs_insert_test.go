package migrations_test

import "testing"

const accountingBlobsInsertVersion = 67

// TestAccountingBlobsInsertUpgrade: the same workload records the same
// counter_deltas after every statement, and copies every blob row into
// blob_storage_blobs_by_namespace, at 00066 (a row trigger for the copy, a
// statement trigger for the bytes), after the upgrade to 00067 (one
// statement for both) and after its Down.
func TestAccountingBlobsInsertUpgrade(t *testing.T) {
	accountingRoundTrip(t, accountingBlobsInsertVersion, "accounting_blobs_insert")
}
