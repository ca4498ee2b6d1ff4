"""Encrypted containers: key objects, subkeys, sealed objects ("Encryption"), and container.json."""

import hashlib
import hmac

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt
from basics import *  # noqa: F401,F403
from store import *  # noqa: F401,F403

# ---------------------------------------------------------------- encryption

def unpad(plain):
    """CF "Sealed objects": strip at the last non-zero byte, which must be
    0x80 (black box: the Padmé length itself is not checked)."""
    stripped = plain.rstrip(b"\0")
    if not stripped or stripped[-1] != 0x80:
        raise Damaged("bad padding")
    return stripped[:-1]


def open_sealed(key, data, aad):
    """nonce (12) || ciphertext || tag (16), AES-256-GCM (CF "Encryption")."""
    if len(data) < 28:
        raise Damaged("sealed object too short")
    try:
        return AESGCM(key).decrypt(data[:12], data[12:], aad)
    except InvalidTag:
        raise Damaged("does not open with the container's key")


def hkdf(master, container_id, info):
    """CF "Subkeys": HKDF-SHA256, salt `ubiqfs <id>`, 32 bytes."""
    return HKDF(algorithm=hashes.SHA256(), length=32,
                salt=("ubiqfs " + container_id).encode(),
                info=info.encode()).derive(master)


class Codec:
    """Content names and object opening: plain or encrypted (CF)."""

    def __init__(self, container_id, master=None):
        self.encrypted = master is not None
        if self.encrypted:
            self.names = hkdf(master, container_id, "ubiqfs names")
            self.content = hkdf(master, container_id, "ubiqfs content")
            self.metadata = hkdf(master, container_id, "ubiqfs metadata")

    def name_of(self, data):
        """CF "Names of content": SHA-256, or HMAC under the names key."""
        if self.encrypted:
            return hmac.new(self.names, data, hashlib.sha256).hexdigest()
        return hashlib.sha256(data).hexdigest()

    def open_object(self, key, data):
        """CF "Sealed objects": AAD `ubiqfs object <key>`, then unpadded."""
        if not self.encrypted:
            return data
        subkey = self.content if key.startswith("blocks/") else self.metadata
        return unpad(open_sealed(subkey, data, ("ubiqfs object " + key).encode()))

    def open_blob(self, name, data):
        """CF "Packed blobs": AAD `ubiqfs blob <h>` under the content key."""
        if not self.encrypted:
            return data
        return unpad(open_sealed(self.content, data, ("ubiqfs blob " + name).encode()))


def read_passphrase(path):
    """SEM/--help: the passphrase is the file's first line."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as err:
        raise Fatal("cannot read the passphrase file %s: %s" % (path, err.strerror))
    # Black box: the line ends at the first "\n" that does not follow a
    # "\r"; a "\r\n" is kept as part of the passphrase (one Swift Character).
    for index, byte in enumerate(data):
        if byte == 0x0A and (index == 0 or data[index - 1] != 0x0D):
            return data[:index]
    return data


def unwrap_key(obj, key_id, container_id, passphrase):
    """CF "Master key and passphrases": scrypt, then AES-GCM of K."""
    kdf = obj.get("kdf") if isinstance(obj, dict) else None
    if not isinstance(kdf, dict) or obj.get("id") != key_id:
        return None
    n, r, p = kdf.get("n"), kdf.get("r"), kdf.get("p")
    if not (is_int(n) and 1 << 10 <= n <= 1 << 22 and n & (n - 1) == 0
            and r == 8 and p == 1 and is_int(r) and is_int(p)):
        return None
    try:
        salt = decode_base64(kdf.get("salt", ""))
        sealed = decode_base64(obj.get("sealed", ""))
    except (Undecodable, AttributeError):
        return None
    if len(salt) != 32:
        return None
    try:
        kek = Scrypt(salt=salt, length=32, n=n, r=8, p=1).derive(passphrase)
    except (MemoryError, ValueError):       # n = 2^22 needs 4 GiB
        return None
    aad = ("ubiqfs key %s %s" % (container_id, key_id)).encode()
    try:
        master = open_sealed(kek, sealed, aad)
    except Damaged:
        return None
    return master if len(master) == 32 else None


def unlock(store, info, passphrase):
    """Try each keys/ object; none opening is "wrong passphrase"."""
    keys = [k for k in store.list("keys/") if HEX32.match(k[len("keys/"):])]
    if passphrase is None:
        raise Fatal("the container is encrypted: give its passphrase "
                    "(--passphrase-file FILE)")
    for key in keys:
        try:
            obj = parse_json(store.get(key, JSON_LIMIT))
        except (NotFound, Damaged, Undecodable):
            continue
        master = unwrap_key(obj, key[len("keys/"):], info["id"], passphrase)
        if master is not None:
            return master
    raise Fatal("wrong passphrase: none of the container's %d key objects "
                "opens with it" % len(keys))


def check_container_mac(info, master):
    """CF: `check` = HMAC(metadata key, "ubiqfs container id format bs created")."""
    metadata = hkdf(master, info["id"], "ubiqfs metadata")
    text = "ubiqfs container %s %d %d %d" % (
        info["id"], info["format"], info["blockSize"], info["created"])
    mac = hmac.new(metadata, text.encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(mac, info["encryption"].get("check", "")):
        raise Fatal("container.json refused: its fields do not match its "
                    "encryption check (it was changed)")


# ---------------------------------------------------------------- container.json

def load_container(store, passphrase):
    """CF "container.json" and "Encryption": open the container, or Fatal."""
    try:
        info = parse_json(store.get("container.json", JSON_LIMIT))
    except NotFound:
        raise Fatal("no container.json in %s" % store.folder)
    except (Damaged, Undecodable) as err:
        raise Fatal("container.json refused: %s" % err)
    if not isinstance(info, dict):
        raise Fatal("container.json refused: not a JSON object")
    fmt = info.get("format")
    if not is_int(fmt) or fmt not in READ_FORMATS:
        raise Fatal("the container has format %r; this reader supports %d to %d"
                    % (fmt, READ_FORMATS[0], READ_FORMATS[-1]))
    if not (isinstance(info.get("id"), str) and HEX32.match(info["id"])):
        raise Fatal("container.json refused: malformed id")
    size = info.get("blockSize")
    if not (is_int(size) and 4096 <= size <= 67108864):
        raise Fatal("container.json refused: blockSize %r out of range" % size)
    if not is_int(info.get("created")):
        raise Fatal("container.json refused: malformed created")
    return info, open_codec(store, info, passphrase)


def open_codec(store, info, passphrase):
    enc = info.get("encryption")
    if enc is None:
        # CF: a device that finds keys/ objects refuses a stripped container.json
        if store.list("keys/"):
            raise Fatal("container.json refused: it has no `encryption` but "
                        "the store holds key objects (it was stripped)")
        return Codec(info["id"])
    if not isinstance(enc, dict) or enc.get("scheme") != SCHEME:
        raise Fatal("unknown encryption scheme %r" % (
            enc.get("scheme") if isinstance(enc, dict) else enc))
    if not (isinstance(enc.get("check"), str) and HEX64.match(enc["check"])):
        raise Fatal("container.json refused: malformed encryption check")
    master = unlock(store, info, passphrase)
    check_container_mac(info, master)
    return Codec(info["id"], master)
