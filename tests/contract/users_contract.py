#!/usr/bin/env python3
"""The contract of the users and roles operations (SPEC §7, U1-U8) on a built cairnd, in the
manner of ../shared/tools/contract_check.py (which covers SPEC §5-§6): shapes, statuses and
error codes that clients outside this repository rely on, not the cluster behaviour.

    python3 tests/contract/users_contract.py --bin build/node/cairnd

Ends with 'N passed, M failed'; exit status 0 only when nothing failed. Python 3 standard
library only; loopback only; the node it starts is ended by its PID.
"""
import argparse, base64, http.client, json, os, shutil, signal, subprocess, sys, tempfile, time

ADMIN, PASSWORD = "admin", "users-contract-pass"
results = []


def check(name, ok, detail=""):
    results.append((name, bool(ok)))
    print(("PASS " if ok else "FAIL ") + name + ("" if ok else "  -- " + str(detail)[:300]))


class Node:
    def __init__(self, binary, data):
        self.binary, self.data, self.proc, self.ops = binary, data, None, None

    def start(self):
        env = dict(os.environ, CAIRN_ADMIN_USER=ADMIN, CAIRN_ADMIN_PASSWORD=PASSWORD)
        log = open(os.path.join(self.data, "node.log"), "ab")
        self.proc = subprocess.Popen(
            [self.binary, "--name", "users1", "--data-dir", self.data,
             "--ops-listen", "127.0.0.1:0", "--peer-listen", "127.0.0.1:0"],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env, start_new_session=True)
        log.close()
        path, deadline = os.path.join(self.data, "ready.json"), time.time() + 30
        while time.time() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                with open(path) as f:
                    doc = json.load(f)
                if doc.get("pid") == self.proc.pid:
                    host, port = doc["ops"].rsplit(":", 1)
                    self.ops = (host, int(port))
                    return True
            except (OSError, ValueError, KeyError):
                pass
            time.sleep(0.05)
        return False

    def stop(self):
        if self.proc and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)

    def request(self, body, user=ADMIN, password=PASSWORD, bearer=None):
        conn = http.client.HTTPConnection(*self.ops, timeout=30)
        headers = {"Content-Type": "application/json"}
        if bearer is not None:
            headers["Authorization"] = "Bearer " + bearer
        elif user is not None:
            token = base64.b64encode(f"{user}:{password}".encode()).decode()
            headers["Authorization"] = "Basic " + token
        try:
            conn.request("POST", "/", body=json.dumps(body).encode(), headers=headers)
            resp = conn.getresponse()
            text = resp.read().decode("utf-8", "replace")
        except (OSError, http.client.HTTPException) as e:
            return None, repr(e)
        finally:
            conn.close()
        try:
            return resp.status, json.loads(text)
        except ValueError:
            return resp.status, text


def is_error(status, body, want_status, want_code):
    return (status == want_status and isinstance(body, dict) and isinstance(body.get("error"), str)
            and body.get("code") == want_code)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    args = ap.parse_args()
    data = tempfile.mkdtemp(prefix="cairn-users-contract-")
    node = Node(os.path.abspath(args.bin), data)
    try:
        if not node.start():
            check("the node starts", False, open(os.path.join(data, "node.log"), errors="replace").read()[-2000:])
            return
        r = node.request
        st, body = r({"operation": "create_table", "database": "dev", "table": "dog", "primary_key": "id",
                      "attributes": [{"name": "id", "type": "ID"}, {"name": "name", "type": "String"},
                                     {"name": "age", "type": "Int"}]})
        check("create_table as the bootstrap admin (U1)", st == 200, (st, body))
        perm = {"dev": {"tables": {"dog": {"read": True, "insert": False, "update": False, "delete": False,
                                           "attribute_permissions": [{"attribute_name": "name", "read": True,
                                                                      "insert": False, "update": False}]}}}}
        st, body = r({"operation": "add_role", "role": "reader", "permission": perm})
        check("add_role: 200 with id, role, permission", st == 200 and isinstance(body, dict)
              and body.get("id") == "reader" and body.get("role") == "reader" and body.get("permission") == perm,
              (st, body))
        st, body = r({"operation": "add_role", "role": "reader", "permission": perm})
        check("add_role again: 409 ROLE_EXISTS", is_error(st, body, 409, "ROLE_EXISTS"), (st, body))
        st, body = r({"operation": "add_role", "role": "bad", "permission": {"nope": {"tables": {}}}})
        check("add_role naming an absent database: 400 INVALID_PERMISSIONS with main_permissions",
              is_error(st, body, 400, "INVALID_PERMISSIONS") and "main_permissions" in body
              and "schema_permissions" in body, (st, body))
        st, body = r({"operation": "list_roles"})
        check("list_roles: an array of roles with id", st == 200 and isinstance(body, list)
              and all("id" in x and "permission" in x for x in body), (st, body))
        st, body = r({"operation": "add_user", "username": "ann", "password": "pw-ann", "role": "reader",
                      "active": True})
        check("add_user: 200 '<user> successfully added'", st == 200 and isinstance(body, dict)
              and body.get("message") == "ann successfully added", (st, body))
        st, body = r({"operation": "add_user", "username": "ann", "password": "x", "role": "reader", "active": True})
        check("add_user again: 409 USER_EXISTS", is_error(st, body, 409, "USER_EXISTS"), (st, body))
        st, body = r({"operation": "add_user", "username": "bob", "password": "x", "role": "nope", "active": True})
        check("add_user with an absent role: 404 ROLE_NOT_FOUND", is_error(st, body, 404, "ROLE_NOT_FOUND"), (st, body))
        st, body = r({"operation": "list_users"})
        check("list_users: no password or hash", st == 200 and isinstance(body, list)
              and "argon2" not in json.dumps(body) and all("password" not in u for u in body), (st, body))
        st, body = r({"operation": "user_info"}, "ann", "pw-ann")
        check("user_info as ann: her name and role", st == 200 and isinstance(body, dict)
              and body.get("username") == "ann" and isinstance(body.get("role"), dict), (st, body))
        st, body = r({"operation": "user_info"}, "ann", "wrong")
        check("a wrong password: 401 UNAUTHORIZED", is_error(st, body, 401, "UNAUTHORIZED"), (st, body))
        st, body = r({"operation": "insert", "database": "dev", "table": "dog", "records": [{"id": 1, "name": "x"}]},
                     "ann", "pw-ann")
        check("a write the role does not allow: 403 FORBIDDEN in Harper's shape",
              is_error(st, body, 403, "FORBIDDEN") and "unauthorized_access" in body
              and "invalid_schema_items" in body, (st, body))
        st, body = r({"operation": "list_users"}, "ann", "pw-ann")
        check("list_users as a non-super user: 403 FORBIDDEN", is_error(st, body, 403, "FORBIDDEN"), (st, body))
        st, body = r({"operation": "create_authentication_tokens", "username": "ann", "password": "pw-ann"}, None)
        ok = st == 200 and isinstance(body, dict) and "operation_token" in body and "refresh_token" in body
        check("create_authentication_tokens without credentials: both tokens", ok, (st, body))
        if ok:
            op, refresh = body["operation_token"], body["refresh_token"]
            st, body = r({"operation": "user_info"}, bearer=op)
            check("Bearer operation token: 200", st == 200 and body.get("username") == "ann", (st, body))
            st, body = r({"operation": "refresh_operation_token"}, bearer=refresh)
            check("refresh_operation_token with the refresh token: a new operation token",
                  st == 200 and isinstance(body, dict) and "operation_token" in body, (st, body))
            st, body = r({"operation": "user_info"}, bearer=op + "x")
            check("a tampered token: 401 UNAUTHORIZED", is_error(st, body, 401, "UNAUTHORIZED"), (st, body))
        st, body = r({"operation": "create_authentication_tokens", "username": "ann", "password": "bad"}, None)
        check("create_authentication_tokens with a wrong password: 401", is_error(st, body, 401, "UNAUTHORIZED"),
              (st, body))
        st, body = r({"operation": "alter_user", "username": "ann", "active": False})
        check("alter_user: 200 'updated 1 of 1 records'", st == 200 and body.get("message") == "updated 1 of 1 records",
              (st, body))
        st, body = r({"operation": "drop_role", "id": "nope"})
        check("drop_role of an absent role: 404 ROLE_NOT_FOUND", is_error(st, body, 404, "ROLE_NOT_FOUND"), (st, body))
        st, body = r({"operation": "drop_user", "username": "admin"})
        check("dropping the last super user: 409 LAST_SUPER_USER", is_error(st, body, 409, "LAST_SUPER_USER"),
              (st, body))
        st, body = r({"operation": "drop_user", "username": "ann"})
        check("drop_user: 200 '<user> successfully deleted'", st == 200 and body.get("message") == "ann successfully deleted",
              (st, body))
        st, body = r({"operation": "drop_role", "id": "reader"})
        check("drop_role: 200 '<role> successfully deleted'", st == 200 and body.get("message") == "reader successfully deleted",
              (st, body))
        st, body = r({"operation": "create_database", "database": "system"})
        check("the system database is reserved: 400 INVALID_NAME", is_error(st, body, 400, "INVALID_NAME"), (st, body))
    finally:
        node.stop()
        shutil.rmtree(data, ignore_errors=True)
        passed = sum(1 for _, ok in results if ok)
        print(f"{passed} passed, {len(results) - passed} failed")
        sys.exit(0 if results and passed == len(results) else 1)


if __name__ == "__main__":
    main()
