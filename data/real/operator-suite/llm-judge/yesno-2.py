# A yes/no LLM judge prompt, tried against the hand labels (issue 31; not in handoff): one call per
# label to the 1.5B on 127.0.0.1:8091, temperature 0. Usage: python3 THIS labels.jsonl > OUT.jsonl
# Its system prompt names the kinds of negative question seen in the labels (errors, tests, code
# changes, how to implement, the whole docstring): tuned on the sample it is measured on.
import json, sys, urllib.request
labels = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
SYSTEM = ("You judge questions a coding agent asks its operator. The operator knows one detail the task left out. Say yes only if the detail itself is a direct answer to the question. Say no if the question asks about errors, failing tests, code changes, how to implement something, or asks for the whole task or docstring again. Reply with yes or no only.")


out = []
for l in labels:
    b = l["blocker"]
    user = f"Detail left out: {b['answer']}\n\nQuestion: {l['question']}\n\nIs the detail a direct answer to the question?"
    body = {"model": "qwen2.5-coder-1.5b-instruct", "temperature": 0.0, "max_tokens": 4,
            "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]}
    req = urllib.request.Request("http://127.0.0.1:8091/v1/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"})
    r = json.load(urllib.request.urlopen(req, timeout=600))
    text = r["choices"][0]["message"]["content"].strip().lower()
    said = text.startswith("yes")
    out.append({"task": l["task"], "question": l["question"], "targets": l["targets"], "said": said, "raw": text})
    print(json.dumps(out[-1]), flush=True)
