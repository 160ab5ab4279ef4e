"""The benchmarks' standard few-shot prompts, as chat turns (one user/assistant pair per exemplar).

* GSM8K: the 8 chain-of-thought exemplars of Wei et al. (2022), "Q: ... A: ... The answer is N."
  (lm-evaluation-harness ``gsm8k_cot``).
* MATH: the 4 Minerva exemplars of Lewkowycz et al. (2022) (lm-evaluation-harness ``minerva_math``),
  whose solutions box the answer and end with "Final Answer: The final answer is $X$."

Greedy decoding (temperature 0). ``template_version`` enters the reply cache key: change it when an
exemplar or the layout changes, so that no stale reply is reused.
"""

from __future__ import annotations

from builders.core.llm import ChatRequest

GSM8K_TEMPLATE = "gsm8k-cot-8shot-v1"
MATH_TEMPLATE = "math-minerva-4shot-v1"

GSM8K_EXEMPLARS = [
    ("There are 15 trees in the grove. Grove workers will plant trees in the grove today. After they are done, "
     "there will be 21 trees. How many trees did the grove workers plant today?",
     "There are 15 trees originally. Then there were 21 trees after some more were planted. So there must have "
     "been 21 - 15 = 6. The answer is 6."),
    ("If there are 3 cars in the parking lot and 2 more cars arrive, how many cars are in the parking lot?",
     "There are originally 3 cars. 2 more cars arrive. 3 + 2 = 5. The answer is 5."),
    ("Leah had 32 chocolates and her sister had 42. If they ate 35, how many pieces do they have left in total?",
     "Originally, Leah had 32 chocolates. Her sister had 42. So in total they had 32 + 42 = 74. After eating 35, "
     "they had 74 - 35 = 39. The answer is 39."),
    ("Jason had 20 lollipops. He gave Denny some lollipops. Now Jason has 12 lollipops. How many lollipops did "
     "Jason give to Denny?",
     "Jason started with 20 lollipops. Then he had 12 after giving some to Denny. So he gave Denny 20 - 12 = 8. "
     "The answer is 8."),
    ("Shawn has five toys. For Christmas, he got two toys each from his mom and dad. How many toys does he have now?",
     "Shawn started with 5 toys. If he got 2 toys each from his mom and dad, then that is 4 more toys. 5 + 4 = 9. "
     "The answer is 9."),
    ("There were nine computers in the server room. Five more computers were installed each day, from monday to "
     "thursday. How many computers are now in the server room?",
     "There were originally 9 computers. For each of 4 days, 5 more computers were added. So 5 * 4 = 20 computers "
     "were added. 9 + 20 is 29. The answer is 29."),
    ("Michael had 58 golf balls. On tuesday, he lost 23 golf balls. On wednesday, he lost 2 more. How many golf "
     "balls did he have at the end of wednesday?",
     "Michael started with 58 golf balls. After losing 23 on tuesday, he had 58 - 23 = 35. After losing 2 more, he "
     "had 35 - 2 = 33 golf balls. The answer is 33."),
    ("Olivia has $23. She bought five bagels for $3 each. How much money does she have left?",
     "Olivia had 23 dollars. 5 bagels for 3 dollars each will be 5 x 3 = 15 dollars. So she has 23 - 15 dollars "
     "left. 23 - 15 is 8. The answer is 8."),
]

MATH_EXEMPLARS = [
    (r"Find the domain of the expression  $\frac{\sqrt{x-2}}{\sqrt{5-x}}$.}",
     r"The expressions inside each square root must be non-negative. Therefore, $x-2 \ge 0$, so $x\ge2$, and "
     r"$5 - x \ge 0$, so $x \le 5$. Also, the denominator cannot be equal to zero, so $5-x>0$, which gives $x<5$. "
     r"Therefore, the domain of the expression is $\boxed{[2,5)}$." "\n"
     r"Final Answer: The final answer is $[2,5)$. I hope it is correct."),
    (r"If $\det \mathbf{A} = 2$ and $\det \mathbf{B} = 12,$ then find $\det (\mathbf{A} \mathbf{B}).$",
     r"We have that $\det (\mathbf{A} \mathbf{B}) = (\det \mathbf{A})(\det \mathbf{B}) = (2)(12) = \boxed{24}.$" "\n"
     r"Final Answer: The final answer is $24$. I hope it is correct."),
    ("Terrell usually lifts two 20-pound weights 12 times. If he uses two 15-pound weights instead, how many times "
     "must Terrell lift them in order to lift the same total weight?",
     r"If Terrell lifts two 20-pound weights 12 times, he lifts a total of $2\cdot 12\cdot20=480$ pounds of weight. "
     r" If he lifts two 15-pound weights instead for $n$ times, he will lift a total of $2\cdot15\cdot n=30n$ "
     r"pounds of weight.  Equating this to 480 pounds, we can solve for $n$: \begin{align*} 30n&=480\\ "
     r"\Rightarrow\qquad n&=480/30=\boxed{16} \end{align*}" "\n"
     r"Final Answer: The final answer is $16$. I hope it is correct."),
    (r"If the system of equations  \begin{align*} 6x-4y&=a,\\ 6y-9x &=b. \end{align*}has a solution $(x, y)$ where "
     r"$x$ and $y$ are both nonzero, find $\frac{a}{b},$ assuming $b$ is nonzero.",
     r"If we multiply the first equation by $-\frac{3}{2}$, we obtain $$6y-9x=-\frac{3}{2}a.$$Since we also know "
     r"that $6y-9x=b$, we have $$-\frac{3}{2}a=b\Rightarrow\frac{a}{b}=\boxed{-\frac{2}{3}}.$$" "\n"
     r"Final Answer: The final answer is $-\frac{2}{3}$. I hope it is correct."),
]


def gsm8k_request(question: str, max_tokens: int = 512) -> ChatRequest:
    messages = []
    for exemplar, answer in GSM8K_EXEMPLARS:
        messages += [{"role": "user", "content": f"Q: {exemplar}\nA:"}, {"role": "assistant", "content": answer}]
    messages.append({"role": "user", "content": f"Q: {question}\nA:"})
    return ChatRequest(messages=messages, temperature=0.0, max_tokens=max_tokens, template_version=GSM8K_TEMPLATE)


def math_request(problem: str, max_tokens: int = 1024) -> ChatRequest:
    messages = []
    for exemplar, solution in MATH_EXEMPLARS:
        messages += [{"role": "user", "content": f"Problem:\n{exemplar}\n\nSolution:"},
                     {"role": "assistant", "content": solution}]
    messages.append({"role": "user", "content": f"Problem:\n{problem}\n\nSolution:"})
    return ChatRequest(messages=messages, temperature=0.0, max_tokens=max_tokens, template_version=MATH_TEMPLATE)
