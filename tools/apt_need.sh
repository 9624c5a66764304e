# Sourced by the scripts that install Debian packages. apt_need PACKAGE... installs those that are
# missing and returns apt-get's status. A bare name counts as installed only for this machine's
# architecture (or as an arch-all package): once tools/test_arm.sh has added arm64 libraries, a
# package installed for arm64 alone must not hide that the native one is missing. A name:arch is
# looked up for that architecture.
apt_need() {
  local native p
  local missing=() sudo_cmd=()
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
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get -o DPkg::Lock::Timeout=600 update -qq >&2 &&
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
      --no-install-recommends "${missing[@]}" >&2
}
