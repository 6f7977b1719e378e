# The behaviour snapshot's first command (scripts/check/behaviour_snapshot.sh: `impress run` of the paper's seven
# systems on PIQA, both ITF units, read-ahead) on 822d7f8's build (LibTorch's kernels) and on c3b0d50's (the fused
# CPU attention), side by side; the snapshot's later commands were stopped for time. Tables without timing:
#   bash scripts/check/behaviour_snapshot.sh BEFORE_BUILD /tmp/snap_before    # stopped after run_prefetch.json
#   bash scripts/check/behaviour_snapshot.sh build /tmp/snap_after             # the same
#   python3 scripts/check/behaviour_table.py /tmp/snap_before/run_prefetch.json > before_table.md
#   python3 scripts/check/behaviour_table.py /tmp/snap_after/run_prefetch.json > after_table.md
#   diff before_table.md after_table.md
