"""MATH's standard few-shot prompt for generating predictions, as chat turns (one user/assistant pair
per exemplar): the 4 Minerva exemplars of Lewkowycz et al. (2022) (lm-evaluation-harness
``minerva_math``), whose solutions box the answer and end with "Final Answer: The final answer is $X$."

Greedy decoding (temperature 0). ``template_version`` enters the reply cache key: change it when an
exemplar or the layout changes, so that no stale reply is reused.
"""

from __future__ import annotations

from builders.core.llm.settings import ChatRequest

MATH_TEMPLATE = "math-minerva-4shot-v1"

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


def math_request(problem: str, max_tokens: int = 1024) -> ChatRequest:
    messages = []
    for exemplar, solution in MATH_EXEMPLARS:
        messages += [{"role": "user", "content": f"Problem:\n{exemplar}\n\nSolution:"},
                     {"role": "assistant", "content": solution}]
    messages.append({"role": "user", "content": f"Problem:\n{problem}\n\nSolution:"})
    return ChatRequest(messages=messages, temperature=0.0, max_tokens=max_tokens, template_version=MATH_TEMPLATE)
