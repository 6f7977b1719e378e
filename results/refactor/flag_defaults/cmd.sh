# The cache and bandwidth flags' defaults of `run` and `reproduce` spelled from their configs'
# numbers (TierFlags::Of, BytesText) instead of a second, hand-written text: each command's
# --help (which shows every default) against the one of 28ddb1c's binary, the build before the
# change (run_help_28ddb1c.txt, reproduce_help_28ddb1c.txt: `impress run --help`, `impress
# reproduce --help` there). Run from the checkout's root with the binary to check:
#   bash results/refactor/flag_defaults/cmd.sh build/impress      # prints "identical" twice
bin=${1:?usage: cmd.sh IMPRESS_BINARY}
here=$(dirname "$0")
for c in run reproduce; do
  "$bin" "$c" --help | diff "$here/${c}_help_28ddb1c.txt" - && echo "$c --help identical"
done
