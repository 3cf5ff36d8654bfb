"""Sources turn raw inputs (recorded listings, OpenAPI documents, live servers) into IR. Nothing else reads raw input."""
