# Sourced by the scripts that install Debian packages. apt_need PACKAGE... installs those that are
# missing and returns apt-get's status. A bare name counts as installed only for this machine's
# architecture (or as an arch-all package): once tools/test_arm.sh has added arm64 libraries, a
# package installed for arm64 alone must not hide that the native one is missing. A name:arch is
# looked up for that architecture.

# as_root COMMAND...: runs it as root (through sudo unless this is root).
as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

apt_need() {
  local native p
  local missing=()
  native="$(dpkg --print-architecture)"
  for p in "$@"; do
    if [[ "$p" == *:* ]]; then
      dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    else
      dpkg-query -W -f='${Architecture} ${Status}\n' "$p" 2>/dev/null |
        grep -Eq "^($native|all) install ok installed" || missing+=("$p")
    fi
  done
  ((${#missing[@]})) || return 0
  echo "kvrt: installing ${missing[*]}" >&2
  as_root apt-get -o DPkg::Lock::Timeout=600 update -qq >&2 &&
    as_root env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
      --no-install-recommends "${missing[@]}" >&2
}
