"""Infrastructure every stage uses: diagnostics, limits, document loading, JSON output, the output file
set, forked workers, progress, 'did you mean' and input-kind detection. Imports nothing above it.
"""
