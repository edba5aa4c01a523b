# A yes/no LLM judge prompt, tried against the hand labels (issue 31; not in handoff): one call per
# label to the 1.5B on 127.0.0.1:8091, temperature 0. Usage: python3 THIS labels.jsonl > OUT.jsonl
# A generic prompt: it does not name any kind of question seen in the labels.
import json, sys, urllib.request
labels = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
SYSTEM = ("You judge questions a coding agent asks its operator. A detail was left out of the "
          "task's description. Answer yes if answering the question would require telling the "
          "agent this detail, no otherwise. Reply with yes or no only.")
out = []
for l in labels:
    b = l["blocker"]
    user = f"Detail left out: {b['answer']}\n\nQuestion: {l['question']}\n\nWould answering the question require this detail?"
    body = {"model": "qwen2.5-coder-1.5b-instruct", "temperature": 0.0, "max_tokens": 4,
            "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]}
    req = urllib.request.Request("http://127.0.0.1:8091/v1/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"})
    r = json.load(urllib.request.urlopen(req, timeout=600))
    text = r["choices"][0]["message"]["content"].strip().lower()
    said = text.startswith("yes")
    out.append({"task": l["task"], "question": l["question"], "targets": l["targets"], "said": said, "raw": text})
    print(json.dumps(out[-1]), flush=True)
