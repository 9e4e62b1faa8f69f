"""What kernel files in the standalone `nki` dialect (0.3 to 0.7) import as `nki`, `nki.language`,
`nki.isa`: a second front-end over the same op table as the beta shim (evidence/nki/shim)."""
