package migrations_test

import "testing"

const accountingContainerRefsVersion = 66

// TestAccountingContainerRefsUpgrade: the inserts and deletes of
// TestAccountingOwnerLookupUpgrade, manifests across images and
// repositories among them, record the same counter_deltas after every
// statement at 00065 (two triggers per manifest statement), after the
// upgrade to 00066 (one) and after its Down; the medians of the timed
// statements are logged with -v.
func TestAccountingContainerRefsUpgrade(t *testing.T) {
	accountingRoundTrip(t, accountingContainerRefsVersion, "accounting_container_refs")
}

const accountingBlobsInsertVersion = 67

// TestAccountingBlobsInsertUpgrade: the same workload records the same
// counter_deltas after every statement, and copies every blob row into
// blob_storage_blobs_by_namespace, at 00066 (a row trigger for the copy, a
// statement trigger for the bytes), after the upgrade to 00067 (one
// statement for both) and after its Down.
func TestAccountingBlobsInsertUpgrade(t *testing.T) {
	accountingRoundTrip(t, accountingBlobsInsertVersion, "accounting_blobs_insert")
}
