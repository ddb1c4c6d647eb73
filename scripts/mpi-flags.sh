# Functions of scripts/install.sh (sourced by it) that read an MPI compiler wrapper's
# `-show` line and write its flags into the .pc and CMake files. Sourced alone by
# tests/it/installed.rs to check them on wrappers' lines of other MPIs.

# mpi_show_words LINE: the words of LINE, one per line, read as build.rs reads them:
# split at blanks (no glob expansion) outside double quotes, an -I, -L or -l standing
# alone joined with the word after it, and double quotes around a word or around its
# value (Intel MPI's -I"DIR" and -L"DIR") removed.
mpi_show_words() {
  local -a words
  local i=0 word flag value
  read -r -a words <<< "${1//$'\n'/ }"
  while [ $i -lt ${#words[@]} ]; do
    word=${words[$i]}
    i=$((i + 1))
    # A quoted value with blanks: the words up to its closing quote.
    while [ $(( $(quotes_in "$word") % 2 )) = 1 ] && [ $i -lt ${#words[@]} ]; do
      word="$word ${words[$i]}"
      i=$((i + 1))
    done
    case "$word" in
      -I|-L|-l)
        if [ $i -lt ${#words[@]} ]; then
          local next=${words[$i]}
          i=$((i + 1))
          while [ $(( $(quotes_in "$next") % 2 )) = 1 ] && [ $i -lt ${#words[@]} ]; do
            next="$next ${words[$i]}"
            i=$((i + 1))
          done
          word="$word$next"
        fi
        ;;
    esac
    case "$word" in
      -I*|-L*|-l*) flag=${word:0:2} value=${word:2} ;;
      *) flag="" value=$word ;;
    esac
    if [ "${#value}" -ge 2 ] && [ "${value:0:1}" = '"' ] && [ "${value: -1}" = '"' ]; then
      value=${value:1:${#value}-2}
    fi
    printf '%s\n' "$flag$value"
  done
}

# quotes_in WORD: how many double quotes WORD has.
quotes_in() {
  local only=${1//[^\"]/}
  echo ${#only}
}

# mpi_flags LINE: sets the arrays mpi_cflags (-I, -D, -pthread) and mpi_libs (-L, -l,
# -Wl,..., -pthread) from the words of a wrapper's -show LINE, in its order.
mpi_flags() {
  local word
  mpi_cflags=() mpi_libs=()
  while IFS= read -r word; do
    case "$word" in
      -I*|-D*) mpi_cflags+=("$word") ;;
      -pthread) mpi_cflags+=("$word"); mpi_libs+=("$word") ;;
      -L*|-l*|-Wl,*) mpi_libs+=("$word") ;;
    esac
  done < <(mpi_show_words "$1")
}

# pc_words WORD...: the words for a .pc file's Cflags or Libs, separated by spaces, each
# escaped so that pkg-config reads it back as one word (a backslash before a blank, a
# quote, a backslash; $ doubled).
pc_words() {
  local word out="" sep=""
  for word in "$@"; do
    word=${word//\\/\\\\}
    word=${word//\$/\$\$}
    word=${word//\"/\\\"}
    word=${word//\'/\\\'}
    word=${word// /\\ }
    out+="$sep$word"
    sep=" "
  done
  printf '%s' "$out"
}

# cmake_list WORD...: the words as the inside of a quoted CMake list, each one element
# (a backslash before a quote, a backslash, a $ and a ;).
cmake_list() {
  local word out="" sep=""
  for word in "$@"; do
    word=${word//\\/\\\\}
    word=${word//\"/\\\"}
    word=${word//\$/\\\$}
    word=${word//;/\\;}
    out+="$sep$word"
    sep=";"
  done
  printf '%s' "$out"
}

# mpi_library WORD...: the real path of the MPI library the -L and -l words of a
# wrapper link (libmpi, or the first -l library found), searched as the linker does:
# the -L directories in order, shared before static. Empty when none is found.
mpi_library() {
  local word dir name file
  local -a dirs=() names=()
  for word in "$@"; do
    case "$word" in
      -L*) dirs+=("${word#-L}") ;;
      -l*) names+=("${word#-l}") ;;
    esac
  done
  # libmpi first when the wrapper links it, else the libraries in the wrapper's order.
  for name in mpi "${names[@]}"; do
    case " ${names[*]} " in *" $name "*) ;; *) continue ;; esac
    for dir in "${dirs[@]}"; do
      for file in "$dir/lib$name.so" "$dir/lib$name.a"; do
        if [ -e "$file" ]; then
          readlink -f "$file"
          return 0
        fi
      done
    done
  done
}
