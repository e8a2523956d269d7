# testlib.sh - helpers shared by the shell tests (sourced):
#   pass/fail DESCRIPTION      count a check
#   expect CODE DESCRIPTION COMMAND...   run, check the exit status;
#                                        stdout in out.txt, stderr in err.txt
#   contains FILE TEXT DESCRIPTION       a fixed string in a file
#   same_weights DIR1 DIR2     the .npy files of two weights directories
#                              are byte-identical (4 of them)
#   json_value FILE KEY        the first value of "KEY": in a JSON file
#   losses_close JSON REF TOL  the "losses" of `popc train --json` and a
#                              reference (one per line): same count, all
#                              within TOL; prints the largest difference
#                              or, when they disagree, both lists
#   mlp_run FILE BATCH EPOCHS SEED       a run file training a small MLP
#                              (64 -> 16 -> 4, Adam) on make_idx's dataset
#   onnx_sgd_run FILE BACKEND MODEL INPUT CLASSES X Y LR DIR
#                              a run file training an ONNX model with SGD
#                              for one epoch of batches of 8 in file order
#                              (X, Y: .npy), no evaluation; weights and
#                              model INI written into DIR
#   md_c_programs MD DIR       each ```c block of MD holding an #include
#                              and named by its first comment ("/* NAME.c
#                              - ") into DIR/NAME.c; prints the names
#   md_section_sh MD HEADING   the first ```sh block after the line HEADING
#   finish                     print the counts; status 1 when one failed
checks=0
failures=0

pass() { checks=$((checks + 1)); echo "ok: $*"; }
fail() { checks=$((checks + 1)); failures=$((failures + 1)); echo "FAIL: $*"; }

expect() {
    want=$1 what=$2
    shift 2
    "$@" >out.txt 2>err.txt
    got=$?
    if [ "$got" -eq "$want" ]; then
        pass "$what (exit $got)"
    else
        fail "$what: exit $got, want $want"
        sed 's/^/    stderr: /' err.txt | head -5
    fi
}

contains() {
    if grep -qF -- "$2" "$1"; then
        pass "$3"
    else
        fail "$3: '$2' not in $1"
        sed 's/^/    | /' "$1" | head -5
    fi
}

same_weights() {
    n=0
    for f in "$1"/*.npy; do
        cmp -s "$f" "$2/$(basename "$f")" || return 1
        n=$((n + 1))
    done
    [ "$n" -eq 4 ]
}

json_value() {
    grep -o "\"$2\": [^,}]*" "$1" | head -n 1 | sed 's/^[^:]*: //; s/"//g'
}

losses_close() {
    got=$(sed -n 's/.*"losses": \[\([^]]*\)\].*/\1/p' "$1" | tr ',' '\n' |
        tr -d ' ' | grep .)
    if [ "$(printf '%s\n' "$got" | grep -c .)" -eq "$(grep -c . "$2")" ] &&
        printf '%s\n' "$got" | paste - "$2" | awk -v tol="$3" '
            { d = $1 - $2; if (d < 0) d = -d; if (d > worst) worst = d }
            END { printf "largest difference %.2g\n", worst; exit !(worst <= tol) }'; then
        return 0
    fi
    echo "$(printf '%s ' $got)vs $(tr '\n' ' ' <"$2")"
    return 1
}

mlp_run() {
    cat >"$1" <<INI
[options]
backend = cpu
[data]
train = train-images-idx3-ubyte
train_labels = train-labels-idx1-ubyte
test = t10k-images-idx3-ubyte.gz
test_labels = t10k-labels-idx1-ubyte
batch_size = $2
shuffle = true
seed = $4
[optimizer]
name = adam
lr = 0.01
[train]
epochs = $3
[model]
input = 64
classes = 4
layers = fc1, relu, fc2
[layer fc1]
type = linear
out_features = 16
[layer fc2]
type = linear
out_features = 4
INI
}

onnx_sgd_run() {
    cat >"$1" <<INI
[options]
backend = $2
[model]
onnx = $3
input = $4
classes = $5
[data]
train = $6
train_labels = $7
batch_size = 8
shuffle = false
[optimizer]
name = sgd
lr = $8
[train]
epochs = 1
evaluate = false
weights = $9/trained.weights
model = $9/trained.ini
INI
}

md_c_programs() {
    awk -v dir="$2" '
        /^```c$/ { inside = 1; text = ""; next }
        /^```/ && inside {
            inside = 0
            if (text ~ /#include/ &&
                match(text, /^\/\* [A-Za-z0-9_.-]+\.c - /)) {
                name = substr(text, 4, RLENGTH - 6)
                printf "%s", text > (dir "/" name)
                close(dir "/" name)
                print name
            }
            next
        }
        inside { text = text $0 "\n" }' "$1"
}

md_section_sh() {
    awk -v h="$2" '
        $0 == h { found = 1; next }
        found && /^```sh$/ { inside = 1; next }
        inside && /^```/ { exit }
        inside { print }' "$1"
}

finish() {
    echo "$checks checks, $failures failed"
    [ "$failures" -eq 0 ]
}
