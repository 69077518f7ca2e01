"""join_datafusion.py — the SQL answer of it_joins' bounded hash join,
computed by DataFusion (deploy/requirements-test.txt, build/venv):

    SELECT e.eid, e.dept, d.dname FROM emp e LEFT JOIN dept d
    ON e.dept = d.dept

emp.csv (eid,dept; an empty dept is null) and dept.csv (dept,dname), both
with a header, are the test's inputs as it produced them; prints one line
"eid:dept:dname" per row ("null" for a null), sorted.
Usage: join_datafusion.py EMP_CSV DEPT_CSV"""
import sys

import datafusion
import pyarrow as pa


def main():
    ctx = datafusion.SessionContext()
    ctx.register_csv("emp", sys.argv[1], has_header=True,
                     schema=pa.schema([("eid", pa.int64()), ("dept", pa.int64())]))
    ctx.register_csv("dept", sys.argv[2], has_header=True,
                     schema=pa.schema([("dept", pa.int64()), ("dname", pa.string())]))
    df = ctx.sql("SELECT e.eid AS eid, e.dept AS dept, d.dname AS dname "
                 "FROM emp e LEFT JOIN dept d ON e.dept = d.dept")
    out = []
    for batch in df.collect():
        for row in batch.to_pylist():
            out.append("%d:%s:%s" % (row["eid"],
                                     "null" if row["dept"] is None else row["dept"],
                                     "null" if row["dname"] is None else row["dname"]))
    for line in sorted(out):
        print(line)


if __name__ == "__main__":
    main()
